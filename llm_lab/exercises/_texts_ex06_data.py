"""Notebook 06's next-token loss exercise: its hint texts and second-step fixes (``_ex06_data``)."""

LOSS_MESSAGES = {
    "max_not_subtracted": {
        "en": "{title}: the loss is {got} where the scores are near 1000 (input: {case}): exp(1000) overflows float32 to inf, and inf / inf is NaN. Subtract each position's largest score before exp: softmax does not change, and every exponent is <= 0.",  # noqa: E501
        "zh": "{title}：分数在 1000 附近时损失是 {got}（输入：{case}）：exp(1000) 在 float32 里溢出成 inf，inf / inf 就是 NaN。取 exp 之前，先减去每个位置上最大的分数：softmax 不变，而所有指数都 <= 0。",  # noqa: E501
    },
    "log_of_softmax": {
        "en": "{title}: the loss is {got} where one target scores 150 below the rest (input: {case}): its probability, about e^-150, rounds to 0 in float32, and ln 0 = -inf. Never form p: ln p = score - ln(sum of exp(scores)), computed on the shifted scores.",  # noqa: E501
        "zh": "{title}：有一个目标的分数比其余低 150 时，损失是 {got}（输入：{case}）：它的概率约为 e^-150，在 float32 里舍入成 0，而 ln 0 = -inf。不要先算出 p：ln p = 分数 - ln(各分数的 exp 之和)，在减过最大值的分数上计算。",  # noqa: E501
    },
    "loss_not_averaged": {
        "en": "{title}: returned one loss per position (input: {case}); the loss is their mean over all B * T predictions, a 0-d tensor.",  # noqa: E501
        "zh": "{title}：返回的是每个位置各自的损失（输入：{case}）；损失是全部 B * T 个预测的平均值，一个 0 维张量。",
    },
    "sum_not_mean": {
        "en": "{title}: the per-prediction losses were summed (input: {case}); the cross-entropy is their mean, so that it does not grow with the batch.",  # noqa: E501
        "zh": "{title}：把各个预测的损失加起来了（输入：{case}）；交叉熵是它们的平均值，这样它才不会随批次变大。",
    },
    "sign_flipped": {
        "en": "{title}: the loss is negative (input: {case}): ln p <= 0, and the loss is -ln p.",
        "zh": "{title}：损失是负的（输入：{case}）：ln p <= 0，损失是 -ln p。",
    },
    "log_base_2": {
        "en": "{title}: the loss is in bits, the natural-log loss divided by ln 2 (input: {case}); the course's loss, like F.cross_entropy, uses the natural log.",  # noqa: E501
        "zh": "{title}：损失是以比特为单位的，等于自然对数损失除以 ln 2（输入：{case}）；本课程的损失与 F.cross_entropy 一样用自然对数。",  # noqa: E501
    },
    "targets_ignored": {
        "en": "{title}: the mean of -ln p over every id of the vocabulary (input: {case}); the loss takes, at each position, only the probability of that position's target.",  # noqa: E501
        "zh": "{title}：对词表中每个 ID 的 -ln p 取了平均（输入：{case}）；损失在每个位置只取该位置目标的概率。",
    },
    "softmax_over_positions": {
        "en": "{title}: the softmax ran over the positions (dim=1) instead of over the vocabulary (input: {case}); each position's V scores are one distribution: dim=-1.",  # noqa: E501
        "zh": "{title}：softmax 是沿位置（dim=1）做的，而不是沿词表（输入：{case}）；每个位置的 V 个分数构成一个分布：dim=-1。",  # noqa: E501
    },
    "targets_shifted_again": {
        "en": "{title}: the targets were shifted by one once more (input: {case}); targets[:, t] is already the id that follows position t (the dataset shifted it), so position t's scores go with targets[:, t].",  # noqa: E501
        "zh": "{title}：又把目标错开了一位（输入：{case}）；targets[:, t] 已经是位置 t 之后的那个 ID（数据集已经错开过），所以位置 t 的分数对应 targets[:, t]。",  # noqa: E501
    },
    "uses_cross_entropy": {
        "en": "{title}: calls {ref}; the exercise is to compute the loss from the scores yourself, with exp, log, max, sum and gather. Compare with it after the check.",  # noqa: E501
        "zh": "{title}：调用了 {ref}；这个练习要你用 exp、log、max、sum 和 gather 自己从分数算出损失。检查通过后再拿它来对照。",  # noqa: E501
    },
}
LOSS_FIXES = {
    "max_not_subtracted": {
        "en": "`shifted = logits - logits.max(dim=-1, keepdim=True).values` before any `exp`.",
        "zh": "在任何 `exp` 之前先 `shifted = logits - logits.max(dim=-1, keepdim=True).values`。",
    },
    "log_of_softmax": {
        "en": "`log_probs = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()`: ln p without forming p.",
        "zh": "`log_probs = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()`：不算出 p 就得到 ln p。",
    },
    "loss_not_averaged": {"en": "`return -picked.mean()`.", "zh": "`return -picked.mean()`。"},
    "sum_not_mean": {
        "en": "`return -picked.mean()`, not `.sum()`.",
        "zh": "`return -picked.mean()`，而不是 `.sum()`。",
    },
    "sign_flipped": {"en": "`return -picked.mean()`: minus ln p.", "zh": "`return -picked.mean()`：负的 ln p。"},
    "targets_ignored": {
        "en": "`picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)`: the target's entry at each position.",  # noqa: E501
        "zh": "`picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)`：每个位置取目标那一项。",
    },
    "softmax_over_positions": {
        "en": "`logits.max(dim=-1, keepdim=True)` and `.sum(dim=-1, keepdim=True)`: over the vocabulary.",
        "zh": "`logits.max(dim=-1, keepdim=True)` 和 `.sum(dim=-1, keepdim=True)`：沿词表。",
    },
    "targets_shifted_again": {
        "en": "`log_probs.gather(-1, targets.unsqueeze(-1))`: every position with its own target, nothing sliced off.",
        "zh": "`log_probs.gather(-1, targets.unsqueeze(-1))`：每个位置配它自己的目标，什么都不切掉。",
    },
    "input_modified": {
        "en": "`shifted = logits - logits.max(dim=-1, keepdim=True).values` (a new tensor), not `logits -= ...` or `logits.sub_(...)`.",  # noqa: E501
        "zh": "`shifted = logits - logits.max(dim=-1, keepdim=True).values`（得到新张量），而不是 `logits -= ...` 或 `logits.sub_(...)`。",  # noqa: E501
    },
}
