package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTraceStatsCmd(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.csv")
	// Four requests at 0, 30, 59 and 61 s (the last minute-bin [60,120) has
	// one) plus a malformed row; mean rate 4 / 61 s = 0.066 req/s.
	os.WriteFile(p, []byte("arrival_s,prompt_tokens,output_tokens\n0,10,1\n30,20,2\n59,30,3\nbad,1,1\n61,40,4\n"), 0o644)

	var out bytes.Buffer
	err := dispatch([]string{"trace", "stats", p}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "t.csv:5:1: field \"arrival_s\"") {
		t.Fatalf("bad row without --skip-bad-rows: %v", err)
	}
	out.Reset()
	if err := dispatch([]string{"trace", "stats", "--skip-bad-rows", p}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"(servesim)",
		"5 read: 4 requests, 1 bad rows skipped",
		"bad row",
		"duration 61.00 s",
		"mean rate 0.066 req/s",
		"peak rate 3 req/min (the minute from 0 s",
		"input 25.0 10 25 37 39.7 40", // 10 20 30 40: p50 at 1.5 → 25, p90 at 2.7 → 37, p99 at 2.97 → 39.7
		"output 2.5 1 2.5 3.7 3.97 4", // 1 2 3 4
	} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := dispatch([]string{"trace", "stats", "--skip-bad-rows", "--json", p}, &out, &out); err != nil {
		t.Fatal(err)
	}
	var st []struct {
		Requests int64             `json:"requests"`
		MeanRate float64           `json:"mean_rate"`
		Counts   struct{ Bad int } `json:"counts"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st) != 1 || st[0].Requests != 4 || st[0].Counts.Bad != 1 {
		t.Errorf("JSON %s: %+v, %v", out.String(), st, err)
	}
	for _, args := range [][]string{
		{"trace"},
		{"trace", "summarize"},
		{"trace", "stats"},
		{"trace", "stats", "--format", "xml", p},
		{"trace", "stats", filepath.Join(dir, "none.csv")},
	} {
		out.Reset()
		if err := dispatch(args, &out, &out); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	out.Reset()
	if err := dispatch([]string{"trace", "--help"}, &out, &out); err != nil || !strings.Contains(out.String(), "Examples:") {
		t.Errorf("help: %v\n%s", err, out.String())
	}
}
