"""Layer-effectiveness measurements for our models and for Hugging Face models.

One module per measurement, each written against the layered-model protocol of
`cod.metrics.stream` (embed / blocks / run_blocks / head):

    stream         residual stream cached at every depth; forwards resumed from it
    variance       per-layer and per-branch output variance (B eq. 4)
    angular        angular distance between the inputs of layers l and l + n (A eq. 1)
    pruning        performance drop when one layer is removed (A section 2)
    causal         causal score matrix and global score (B eq. 5-6)
    permutation    permutation score of every pair and global score (B eq. 7-8)
    usefulness     affine-replacement usefulness, E / W (B eq. 9-10, Table 1)
    jacobian       per-token block Jacobians, ||J - I||_F / d (B Fig. 2b, 3, 12)
    weights        weight sparsity at thresholds (B eq. 14)
    attention      attention sparsity and entropy (B eq. 15-16, 21-23)
    kurtosis       per-dimension and per-layer kurtosis (B eq. 19-20)
    effectiveness  all of the above on one model, timed
    depth          paper A's measures by depth on one model, over groups of windows (A Fig. 2, 5), timed
"""
