"""Sample sizes of the theory notebooks for each profile: smoke (seconds, tests), default (the committed
run, a few minutes on a 2-core CPU), paper (larger samples, same statements)."""

from __future__ import annotations

A3 = {
    "smoke": dict(var_layers=8, var_samples=4, var_d=32, var_tokens=8, input_stds=[1.0, 10.0], n_boot=30,
                  jac_layers=4, jac_samples=2, jac_d=16, jac_tokens=2, id_samples=2, id_stds=[1.0, 10.0, 100.0],
                  qg_depths=[1, 2], qg_samples=2, qg_iter=3,
                  lm_layers=4, lm_d=32, lm_steps=4, lm_batch=4, lm_seq=16, lm_jac_tokens=4),
    "default": dict(var_layers=96, var_samples=48, var_d=64, var_tokens=16, input_stds=[0.3, 1.0, 3.0, 10.0, 30.0],
                    n_boot=300, jac_layers=64, jac_samples=12, jac_d=32, jac_tokens=4, id_samples=12,
                    id_stds=[0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0], qg_depths=[1, 2, 4, 8, 16, 32],
                    qg_samples=6, qg_iter=15,
                    lm_layers=16, lm_d=64, lm_steps=150, lm_batch=16, lm_seq=32, lm_jac_tokens=8),
    "paper": dict(var_layers=128, var_samples=128, var_d=128, var_tokens=32, input_stds=[0.3, 1.0, 3.0, 10.0, 30.0, 100.0],
                  n_boot=1000, jac_layers=128, jac_samples=32, jac_d=32, jac_tokens=4, id_samples=32,
                  id_stds=[0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0], qg_depths=[1, 2, 4, 8, 16, 32, 64],
                  qg_samples=16, qg_iter=25,
                  lm_layers=32, lm_d=64, lm_steps=600, lm_batch=16, lm_seq=64, lm_jac_tokens=8),
}

B2 = {
    "smoke": dict(n_boot=30, mask_d=16, mask_layers=4, mask_draws=16, rhos=[0.1, 0.5, 1.0], tb_draws=4, tb_tokens=4,
                  wd_draws=200, wd_steps=[0, 10, 100], wd_lams=[0.1, 1.0], sgd_steps=50, sgd_draws=20,
                  attn_draws=100, attn_ns=[4, 16, 64], gqa_draws=100, gqa_keys=16, moe_draws=20, moe_ks=[1, 2, 4],
                  lemma1_layers=4, lemma1_samples=2),
    "default": dict(n_boot=300, mask_d=64, mask_layers=16, mask_draws=256, rhos=[0.02, 0.05, 0.1, 0.2, 0.5, 1.0],
                    tb_draws=128, tb_tokens=16, wd_draws=4000, wd_steps=[0, 10, 30, 100, 300, 1000, 3000],
                    wd_lams=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0], sgd_steps=3000, sgd_draws=400,
                    attn_draws=2000, attn_ns=[4, 8, 16, 32, 64, 128, 256, 512, 1024], gqa_draws=2000, gqa_keys=256,
                    moe_draws=600, moe_ks=[1, 2, 4, 8, 16, 32], lemma1_layers=48, lemma1_samples=8),
    "paper": dict(n_boot=1000, mask_d=128, mask_layers=32, mask_draws=512, rhos=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0],
                  tb_draws=512, tb_tokens=32, wd_draws=20000, wd_steps=[0, 10, 30, 100, 300, 1000, 3000, 10000],
                  wd_lams=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0], sgd_steps=10000, sgd_draws=2000,
                  attn_draws=10000, attn_ns=[4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096], gqa_draws=10000,
                  gqa_keys=1024, moe_draws=2000, moe_ks=[1, 2, 4, 8, 16, 32, 64], lemma1_layers=64, lemma1_samples=16),
}
