# SPDX-License-Identifier: MIT
"""What the stack tests share: skipping when a framework is missing, and
printing results so that a native run and a run through vgpu print the same
text (rounded to what the GPU computes the same way every time), while
correctness is checked against a reference with a tolerance."""
import os
import sys

SKIP = 77


def need(module):
    """Imports a framework or exits 77 (skipped) naming what is missing."""
    try:
        return __import__(module)
    except Exception as e:  # noqa: BLE001
        print(f"{os.path.basename(sys.argv[0])}: no {module} ({e})")
        sys.exit(SKIP)


def sig(x, digits=4):
    """A float rounded to @digits significant digits, as text."""
    return f"{float(x):.{digits}g}"


class Checks:
    """Collects named pass/fail checks; exit status 1 when any failed."""

    def __init__(self):
        self.failed = []

    def close(self, name, got, want, tol):
        err = abs(float(got) - float(want))
        ok = err <= tol * max(1.0, abs(float(want)))
        print(f"{name}: {'ok' if ok else 'MISMATCH'}")
        if not ok:
            self.failed.append(name)
            print(f"  {name}: got {got}, want {want} (tolerance {tol})", file=sys.stderr)
        return ok

    def true(self, name, cond, detail=""):
        print(f"{name}: {'ok' if cond else 'FAILED'}")
        if not cond:
            self.failed.append(name)
            print(f"  {name}: {detail}", file=sys.stderr)
        return cond

    def done(self):
        if self.failed:
            print("failed:", " ".join(self.failed))
            sys.exit(1)
        print("all checks passed")
        sys.exit(0)
