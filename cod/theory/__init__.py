"""Numerical checks of every lemma and theorem of the two papers (notebooks a3_theory, b2_theory).

Modules, one job each:
    fits              power-law / exponential fits with t and bootstrap confidence intervals
    claims            verdict rules (holds / holds loosely / fails, with tolerances) and the results.json writer
    stack             random Pre-LN / LNS residual stacks batched over draws (paper A eqs. 2-4, 51)
    residual_variance paper A Lemmas 3.2 and 4.1: growth exponents, per-layer law, a rigorous bound
    jacobians         exact block Jacobians and their products, Theorem 4.3's query gradient
    bounds            paper A's Jacobian bounds (eqs. 9, 15, 36, 47-49, 61, 81)
    real_stack        cod.model.Transformer at a small size, trained on a Markov source
    attention         paper A eq. 27 / Lemma A.1, paper B Theorems 4-5
    sparsity          paper B Theorems 1-2 (feature masks)
    weight_decay      paper B Theorem 3 (decoupled weight decay)
    moe               paper B Theorem 6 (top-k mixture of experts)
"""
