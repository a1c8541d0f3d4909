package sim_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/servesim/servesim/sim"
)

// An M/M/1 queue: Poisson arrivals at rate λ = 0.8/s, exponential service at
// rate μ = 1/s, one server. Queueing theory gives the mean wait in queue
// Wq = ρ/(μ−λ) with ρ = λ/μ, i.e. 0.8/(1−0.8) = 4 s. The simulation of
// 500,000 customers agrees to within a few percent.
func Example_mm1() {
	const lambda, mu, customers = 0.8, 1.0, 500_000
	arrivals := rand.New(rand.NewPCG(42, 1)) // one stream per purpose
	service := rand.New(rand.NewPCG(42, 2))

	var eng sim.Engine
	var queue []sim.Time // arrival times of waiting customers
	busy := false
	var totalWait sim.Time
	served := 0

	var arrive, depart sim.HandlerFunc
	startService := func(now sim.Time, arrivedAt sim.Time) {
		busy = true
		totalWait += now - arrivedAt
		served++
		eng.After(sim.FromSeconds(service.ExpFloat64()/mu), 0, depart)
	}
	arrive = func(now sim.Time) {
		if busy {
			queue = append(queue, now)
		} else {
			startService(now, now)
		}
		if served+len(queue) < customers {
			eng.After(sim.FromSeconds(arrivals.ExpFloat64()/lambda), 0, arrive)
		}
	}
	depart = func(now sim.Time) {
		busy = false
		if len(queue) > 0 {
			next := queue[0]
			queue = queue[1:]
			startService(now, next)
		}
	}
	eng.Schedule(0, 0, arrive)
	eng.Run()

	rho := lambda / mu
	fmt.Printf("formula Wq = %.2f s\n", rho/(mu-lambda))
	wq := totalWait.Seconds() / float64(served)
	fmt.Printf("simulated Wq = %.2f s (within 5%%: %v)\n", wq, abs(wq/(rho/(mu-lambda))-1) < 0.05)
	// Output:
	// formula Wq = 4.00 s
	// simulated Wq = 4.07 s (within 5%: true)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
