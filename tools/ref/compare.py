"""One comparison of an omnic stage against a reference array, shared by the tools/ref oracles.

compare(name, ref, got, atol, rtol) passes when shapes match, every |got - ref| <= atol +
rtol * |ref| and got is finite; it prints one line either way (max |diff|, max |ref|, the
relative error and the flat index of the worst element against its limit).
"""
import numpy as np


def compare(name: str, ref: np.ndarray, got: np.ndarray, atol: float, rtol: float) -> bool:
    if ref.shape != got.shape:
        print(f"FAIL {name}: shape {got.shape} != reference {ref.shape}")
        return False
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    lim = atol + rtol * np.abs(ref)
    ok = bool(np.all(diff <= lim)) and bool(np.all(np.isfinite(got)))
    dmax = diff.max() if diff.size else 0.0
    rmax = np.abs(ref).max() if ref.size else 0.0
    worst = int(np.argmax(diff - lim)) if diff.size else 0
    print(f"{'ok  ' if ok else 'FAIL'} {name:16s} {str(tuple(ref.shape)):12s} max |diff| {dmax:.3g}"
          f" (max |ref| {rmax:.3g}, rel {dmax / max(rmax, 1e-30):.3g}; worst at flat index {worst})")
    return ok
