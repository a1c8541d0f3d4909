package parallel

import (
	"runtime"
	"sync"
)

// Run calls fn(i) for i in [0, n) on workers goroutines (≤ 0: all
// cores) and returns when all are done. progress, when set, is called after
// each i with the count done so far, under a lock. Each fn(i) must write only
// its own results, so the outcome does not depend on the number of workers.
func Run(n, workers int, fn func(i int), progress func(done, total int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	jobs := make(chan int)
	for range min(workers, max(1, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				fn(i)
				if progress != nil {
					mu.Lock()
					done++
					progress(done, n)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}
