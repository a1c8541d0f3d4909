package main

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// summaryValue returns the number a run's summary prints after label
// ("Median TTFT (ms):").
func summaryValue(t *testing.T, out, label string) float64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, label); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no %q in the output:\n%s", label, tail(out))
	return 0
}

// sameFigure reports whether doc, a figure as a page writes it ("39.0",
// "433,936"), is got rounded to doc's decimals; got is read from a summary
// printed to 2 decimals, so half a unit of doc's last digit plus 0.005 is
// allowed.
func sameFigure(doc string, got float64) bool {
	doc = strings.ReplaceAll(doc, ",", "")
	v, err := strconv.ParseFloat(doc, 64)
	if err != nil {
		return false
	}
	decimals := 0
	if i := strings.Index(doc, "."); i >= 0 {
		decimals = len(doc) - i - 1
	}
	return math.Abs(v-got) <= 0.5*math.Pow(10, -float64(decimals))+0.005+1e-9
}

// TestDocsEngineComparison: Engine model's table of one workload on the
// vllm-v1 and sglang engines (`servesim run --engine E --rate R -n 1000`)
// is what those runs print, row by row.
func TestDocsEngineComparison(t *testing.T) {
	page := docPage(t, "docs/engine-model.md")
	const header = "| engine | req/s offered | req/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | ITL p99 ms | E2E p50 s | KV tokens |"
	i := strings.Index(page, header)
	if i < 0 {
		t.Fatalf("docs/engine-model.md has no table %q", header)
	}
	kvTokens := regexp.MustCompile(`KV cache: \d+ blocks of \d+ tokens \((\d+) tokens`)
	rows := 0
	t.Chdir(t.TempDir())
	for _, line := range strings.Split(page[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 9 {
			t.Fatalf("%q: %d cells, want 9", line, len(cells))
		}
		rows++
		engine := strings.Fields(cells[0])
		args := []string{"run", "--engine", engine[0], "--rate", cells[1], "-n", "1000"}
		for _, f := range engine[1:] {
			args = append(args, strings.Trim(f, "`"))
		}
		out, code := runCapture(args)
		if code != 0 {
			t.Fatalf("servesim %s: exit %d:\n%s", strings.Join(args, " "), code, tail(out))
		}
		m := kvTokens.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("servesim %s: no KV cache line:\n%s", strings.Join(args, " "), tail(out))
		}
		kv, _ := strconv.ParseFloat(m[1], 64)
		got := []float64{
			summaryValue(t, out, "Request throughput (req/s):"),
			summaryValue(t, out, "Median TTFT (ms):"),
			summaryValue(t, out, "P99 TTFT (ms):"),
			summaryValue(t, out, "Median TPOT (ms):"),
			summaryValue(t, out, "P99 ITL (ms):"),
			summaryValue(t, out, "Median E2EL (ms):") / 1000,
			kv,
		}
		for j, g := range got {
			if !sameFigure(cells[j+2], g) {
				t.Errorf("%s, %s: the page says %s, servesim %s prints %s", cells[0], strings.Split(strings.Trim(header, "| "), " | ")[j+2], cells[j+2], strings.Join(args, " "), strconv.FormatFloat(g, 'f', -1, 64))
			}
		}
	}
	if rows != 5 {
		t.Errorf("%d rows in the engine table, want 5", rows)
	}
}

// TestDocsFrontEndCommands: Engine model's "Setting the front end for your
// host" runs its two servesim commands as written: the first (front end
// off) prints the mean TTFT its comment gives, and with the built-in
// front end (5.504 ms, --front-end-request-ms dropped) the second prints
// the figure the text after the block gives.
func TestDocsFrontEndCommands(t *testing.T) {
	page := docPage(t, "docs/engine-model.md")
	i := strings.Index(page, "**Setting the front end for your host.**")
	if i < 0 {
		t.Fatal("docs/engine-model.md has no \"Setting the front end for your host\"")
	}
	page = page[i:]
	start := strings.Index(page, "```sh\n")
	end := strings.Index(page[start+6:], "```") + start + 6
	block := page[start+6 : end]
	cmds := shellCommands(block)
	if len(cmds) != 2 {
		t.Fatalf("%d servesim commands in the front-end block, want 2", len(cmds))
	}
	engineTTFT := regexp.MustCompile(`# mean TTFT ([\d.]+) ms: the engine's part`).FindStringSubmatch(block)
	builtIn := regexp.MustCompile(`with the built-in 5\.504 ms the second gives ([\d.]+) ms`).FindStringSubmatch(page[end:])
	if engineTTFT == nil || builtIn == nil {
		t.Fatalf("the front-end block's figures not found (mean TTFT … the engine's part; the built-in 5.504 ms … gives)")
	}
	second := []string{}
	for j := 0; j < len(cmds[1]); j++ {
		if cmds[1][j] == "--front-end-request-ms" {
			j++
			continue
		}
		second = append(second, cmds[1][j])
	}
	t.Chdir(t.TempDir())
	for k, c := range []struct {
		args []string
		want string
	}{{cmds[0], engineTTFT[1]}, {second, builtIn[1]}} {
		out, code := runCapture(c.args)
		if code != 0 {
			t.Fatalf("servesim %s: exit %d:\n%s", strings.Join(c.args, " "), code, tail(out))
		}
		if got := summaryValue(t, out, "Mean TTFT (ms):"); !sameFigure(c.want, got) {
			t.Errorf("command %d, servesim %s: mean TTFT %.2f ms, the page says %s", k+1, strings.Join(c.args, " "), got, c.want)
		}
	}
	if len(second) != len(cmds[1])-2 {
		t.Errorf("the second command sets no --front-end-request-ms: %v", cmds[1])
	}
}
