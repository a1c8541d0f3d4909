#!/usr/bin/env bash
# Import rules (DEVELOPERS.md, STYLE.md §1 and §4):
# - package sim (the engine core) imports only the standard library;
# - no math/rand v1 and no time.Now in the simulation packages;
# - policies never import the serving world.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
core=$(go list -f '{{join .Imports "\n"}}' ./sim | grep '\.' || true)
if [ -n "$core" ]; then echo "sim imports non-stdlib packages: $core"; fail=1; fi
for pkg in ./sim/... ./models/... ./hardware/... ./policies/...; do
  if go list -f '{{join .Imports "\n"}}' $pkg | grep -qx 'math/rand'; then
    echo "$pkg imports math/rand v1 (use math/rand/v2 with an explicit source)"; fail=1
  fi
done
if grep -rn --include='*.go' 'time\.Now' sim models hardware policies | grep -v _test.go; then
  echo "time.Now in simulation code"; fail=1
fi
if go list -f '{{join .Imports "\n"}}' ./policies/... | grep -q 'servesim/sim/serve'; then
  echo "policies imports the serving world"; fail=1
fi
# experiments/: scenario builds on none of its siblings; sweep, plan and
# validate build on scenario and never on one another (experiments/doc.go).
for pkg in scenario sweep plan validate; do
  for other in scenario sweep plan validate; do
    [ "$pkg" = "$other" ] && continue
    [ "$other" = scenario ] && continue
    if go list -f '{{join .Imports "\n"}}' ./experiments/$pkg | grep -qx "github.com/servesim/servesim/experiments/$other"; then
      echo "experiments/$pkg imports its sibling experiments/$other"; fail=1
    fi
  done
done
if go list -f '{{join .Imports "\n"}}' ./experiments | grep -q 'servesim'; then
  echo "package experiments (the embedded files) imports servesim packages"; fail=1
fi
exit $fail
