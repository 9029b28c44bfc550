"""A pendulum swung forward and then back: the Taylor steps return it to where it started, and
dense output gives the angle anywhere in between."""

import numpy as np

import subgraph_ad as sad


def rhs(t, s):
    return np.array([s[1], -np.sin(s[0])])


if __name__ == "__main__":
    start = np.array([2.0, 0.0])  # 115 degrees: far from the small-angle regime
    there = sad.taylor_integrate(rhs, (0.0, 100.0), start, dense_output=True)
    back = sad.taylor_integrate(rhs, (100.0, 0.0), there.y[:, -1])
    print(f"forward: {there.nsteps} steps to t = 100, angle {there.y[0, -1]: .15f}")
    print(f"back:    {back.nsteps} steps to t = 0,   angle {back.y[0, -1]: .15f} (started at {start[0]})")
    print(f"distance from the start: {np.max(np.abs(back.y[:, -1] - start)):.1e}")
    print("angle at t = 10, 20, 30 from dense output:", np.round(there.sol(np.array([10.0, 20.0, 30.0]))[0], 12))
    assert np.max(np.abs(back.y[:, -1] - start)) < 1e-11
