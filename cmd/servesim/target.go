package main

import (
	"fmt"
	"math"
)

// checkTarget checks an SLO-attainment target flag: a fraction in (0, 1].
// The flag's default is 0.9; an explicit 0 (or anything outside the range,
// NaN included) is an error rather than a silent 0.9.
func checkTarget(cmd string, v float64) error {
	if !(v > 0 && v <= 1) {
		return fmt.Errorf("%s: --target %g: want an SLO-attainment fraction in (0, 1], e.g. 0.9 for 90 %% of requests", cmd, v)
	}
	return nil
}

// checkPositive checks a flag that must be a finite number > 0.
func checkPositive(cmd, flag string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%s: --%s %g: want a finite number > 0", cmd, flag, v)
	}
	return nil
}
