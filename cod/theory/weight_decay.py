"""Decoupled weight decay as variance control: paper B Theorem 3 (App. B.4).

Reconstructed statement. W_{t+1} = (1 - eta lam) W_t - eta g_t with 0 < eta lam < 1, gradient noise g_t
independent of W_t, E g_t = 0, Var(g_t) <= s_g^2 per entry. With v_t = Var(W_t) per entry, a = (1 - eta lam)^2,
    v_t <= a^t v_0 + eta^2 s_g^2 (1 - a^t) / (1 - a),   fixed point v* = eta s_g^2 / (lam (2 - eta lam)),
and for a linear output y = W_t x with x independent of W_t, E x = 0, covariance Sigma_x,
    Var(y_i) <= a^t (v_0 tr Sigma_x + mu_0i^T Sigma_x mu_0i) + eta s_g^2 tr Sigma_x / (lam (2 - eta lam)),
mu_0i the initial mean of row i. Both terms decrease in lam when eta lam < 1 (eq. 59, 74).
"""

from __future__ import annotations

import numpy as np


def variance_fixed_point(lr: float, lam: float, noise_var: float) -> float:
    """v* = eta s_g^2 / (lam (2 - eta lam)), the fixed point of v <- a v + eta^2 s_g^2."""
    return lr * noise_var / (lam * (2 - lr * lam))


def parameter_variance(t, lr: float, lam: float, v0: float, noise_var: float):
    """Exact Var(W_t) per entry when Var(g_t) = s_g^2 (the bound holds with equality)."""
    a = (1 - lr * lam) ** 2
    t = np.asarray(t, float)
    return a**t * v0 + lr**2 * noise_var * (1 - a**t) / (1 - a)


def output_variance_bound(t, lr: float, lam: float, v0: float, mu0_sq: float, noise_var: float, trace_x: float):
    """Theorem 3's bound on Var(y_i); mu0_sq = mu_0i^T Sigma_x mu_0i."""
    a = (1 - lr * lam) ** 2
    t = np.asarray(t, float)
    return a**t * (v0 * trace_x + mu0_sq) + variance_fixed_point(lr, lam, noise_var) * trace_x


def simulate_noise_updates(lams, steps, lr: float, v0: float, mu0: float, noise_var: float, d_in: int,
                           n_draws: int, seed: int = 0) -> dict:
    """Theorem 3's setting: D draws of one weight row (d_in) under decoupled decay and Gaussian noise.

    Returns per lam (L,) and checkpoint (T,): the sample variance of the weights and of y = W x with
    x ~ N(0, I) fresh per draw, plus each draw's y (L, T, D) for bootstrap intervals.
    """
    rng = np.random.default_rng(seed)
    steps = np.asarray(steps)
    lams = np.asarray(lams, float)[:, None, None]  # (L, 1, 1)
    w = mu0 + np.sqrt(v0) * rng.standard_normal((lams.shape[0], n_draws, d_in))  # (L, D, d_in)
    wvar, ys = np.empty((lams.shape[0], len(steps))), np.empty((lams.shape[0], len(steps), n_draws))
    for t in range(steps.max() + 1):
        hit = np.nonzero(steps == t)[0]
        if hit.size:
            wvar[:, hit[0]] = w.var(1).mean(-1)
            ys[:, hit[0]] = (w * rng.standard_normal(w.shape)).sum(-1)
        w = (1 - lr * lams) * w - lr * np.sqrt(noise_var) * rng.standard_normal(w.shape)
    return dict(weight_var=wvar, y=ys, output_var=ys.var(-1))


def sgd_regression(lams, n_steps: int, lr: float, d_in: int, n_draws: int, noise: float = 0.5, seed: int = 0) -> dict:
    """Beyond the assumptions: SGD (batch 1) on y = w* . x + noise with decoupled decay, gradient (W x - y) x.

    The gradient now depends on W_t and has a non-zero mean (the learning signal). Returns per lam the
    stationary output variance E[(W x)^2] over draws, the measured per-entry gradient variance and
    initial-state terms needed by Theorem 3's bound, and the bound itself.
    """
    rng = np.random.default_rng(seed)
    lams = np.asarray(lams, float)[:, None, None]
    w_star = rng.standard_normal(d_in) / np.sqrt(d_in)
    v0 = 0.02**2
    w = 0.02 * rng.standard_normal((lams.shape[0], n_draws, d_in))
    grad_var = np.zeros(lams.shape[0])
    tail = n_steps // 2
    for t in range(n_steps):
        x = rng.standard_normal((lams.shape[0], n_draws, d_in))
        y = x @ w_star + noise * rng.standard_normal((lams.shape[0], n_draws))
        grad = ((w * x).sum(-1) - y)[..., None] * x
        if t >= tail:
            grad_var += grad.var(1).mean(-1) / (n_steps - tail)
        w = (1 - lr * lams) * w - lr * grad
    out_var = (w**2).sum(-1).mean(-1)  # E[(W x)^2], x ~ N(0, I): the layer's output variance
    lam = lams[:, 0, 0]
    bound = np.array([output_variance_bound(n_steps, lr, l_, v0, 0.0, gv, d_in) for l_, gv in zip(lam, grad_var)])
    return dict(lams=lam, output_var=out_var, grad_var=grad_var, bound=bound,
                ridge_output_var=np.array([float(np.sum((w_star / (1 + l_)) ** 2)) for l_ in lam]))

