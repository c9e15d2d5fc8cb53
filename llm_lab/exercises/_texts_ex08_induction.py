"""The hint texts of ``_ex08_induction``, shared by its two exercises."""

_MESSAGES = {
    "same_token_not_next": {
        "en": "{title}: this scores the weight on earlier copies of the current token itself (input: {case}); an induction head looks one further, at the token that came after the copy.",  # noqa: E501
        "zh": "{title}：这算的是放在当前词元更早副本本身上的权重（输入：{case}）；归纳头要再往后看一个位置，看副本后面的那个词元。",  # noqa: E501
    },
    "current_included": {
        "en": "{title}: a query's own position counts as a target (input: {case}); keep only keys j < i: the head must find the answer in the past, not in the token it is reading.",  # noqa: E501
        "zh": "{title}：把查询自己的位置也算成了目标（输入：{case}）；只保留 j < i 的键：头必须在过去找到答案，而不是在正在读的词元里。",  # noqa: E501
    },
    "rows_without_target": {
        "en": "{title}: the mean also counts rows whose token never occurred before (input: {case}); those rows have no induction target: leave them out of the average.",  # noqa: E501
        "zh": "{title}：平均值把前文从未出现过当前词元的行也算了进去（输入：{case}）；这些行没有归纳目标，不应参与平均。",  # noqa: E501
    },
    "probe_offset_used": {
        "en": "{title}: the score reads key i - T/2 + 1 in the rows i >= T/2, the lesson's probe formula, whatever the tokens (input: {case}); that holds only where the second half repeats the first. On any text, find each query's targets from the ids: the keys j < i with token_ids[j - 1] == token_ids[i].",  # noqa: E501
        "zh": "{title}：分数读的是第 i >= T/2 行里的键 i - T/2 + 1，也就是正文探针的公式，而不管词元是什么（输入：{case}）；这只在后一半重复前一半时才成立。在任意文本上，要从 ID 找出每个查询的目标：满足 j < i 且 token_ids[j - 1] == token_ids[i] 的键 j。",  # noqa: E501
    },
    "not_a_head_index": {
        "en": "{title}: expected the index of a layer-0 head, one int, got {got} (input: {case}).",
        "zh": "{title}：应当返回第 0 层某个头的下标（一个整数），实际得到 {got}（输入：{case}）。",
    },
    "no_such_head": {
        "en": "{title}: returned {got}, but layer 0 has {heads} heads, numbered 0 to {heads} - 1 (input: {case}).",
        "zh": "{title}：返回了 {got}，但第 0 层只有 {heads} 个头，编号从 0 到 {heads} - 1（输入：{case}）。",
    },
    "picked_by_pattern": {
        "en": "{title}: returned {got}, the layer-0 head that looks most like a previous-token head in the clean run (input: {case}); that is a guess from its pattern, and the asked head does not need it. Read the ablations: the induction score of (layer, head) in each run without one layer-0 head.",  # noqa: E501
        "zh": "{title}：返回了 {got}，它是未消融运行里最像前一个词元头的第 0 层头（输入：{case}）；这只是看图样猜的，被问到的头并不依赖它。请读消融结果：在每次去掉一个第 0 层头的运行里，(layer, head) 的归纳分数。",  # noqa: E501
    },
    "other_induction_head": {
        "en": "{title}: returned {got}, the head that the strongest induction head of the clean run depends on (input: {case}); the question is about head (layer, head) given to you, which is another one. Score that head, `runs[:, layer, head]`.",  # noqa: E501
        "zh": "{title}：返回了 {got}，它是未消融运行里最强的那个归纳头所依赖的头（输入：{case}）；题目问的是给你的 (layer, head) 那个头，不是它。请只给那个头打分：`runs[:, layer, head]`。",  # noqa: E501
    },
    "clean_run_counted": {
        "en": "{title}: returned {got}, one more than the head whose ablation hurts most ({want}) (input: {case}): run 0 is the clean run, so run 1 + h is the one without head h; drop run 0 before the argmax, or subtract 1.",  # noqa: E501
        "zh": "{title}：返回了 {got}，比消融后伤害最大的那个头（{want}）多 1（输入：{case}）：第 0 次运行是未消融的，第 1 + h 次运行才是去掉头 h 的那次；取 argmax 前先去掉第 0 次运行，或者减 1。",  # noqa: E501
    },
    "layer_ignored": {
        "en": "{title}: returned {got}, the answer for the same head index in another layer, not for layer {layer} asked (input: {case}); the induction head may sit in any layer above 0: score `runs[:, layer, head]`, with the `layer` you are given.",  # noqa: E501
        "zh": "{title}：返回了 {got}，这是另一层里同一个头编号的答案，而不是题目问的第 {layer} 层（输入：{case}）；归纳头可以在第 0 层之上的任何一层：请用给你的 `layer` 给 `runs[:, layer, head]` 打分。",  # noqa: E501
    },
    "copy_key_scored": {
        "en": "{title}: returned {got}, the head whose ablation lowers the weight on the copy itself, key i - T/2 (input: {case}); an induction head looks one further, at key i - T/2 + 1, the token that came after the copy.",  # noqa: E501
        "zh": "{title}：返回了 {got}，去掉它会降低放在副本本身（键 i - T/2）上的权重（输入：{case}）；归纳头要再往后看一个位置，看键 i - T/2 + 1，也就是副本后面的那个词元。",  # noqa: E501
    },
    "least_drop": {
        "en": "{title}: returned {got}, the layer-0 head whose ablation leaves the induction score *highest*: the head this induction head needs least (input: {case}). The head it depends on is the one whose ablation lowers the score most.",  # noqa: E501
        "zh": "{title}：返回了 {got}，去掉它之后归纳分数*最高*，也就是这个归纳头最不需要的头（输入：{case}）。它所依赖的头，是去掉之后分数降得最多的那个。",  # noqa: E501
    },
    "wrong_layer0_head": {
        "en": "{title}: returned {got}, not the layer-0 head {want} whose ablation lowers the induction score of (layer, head) most (input: {case}); no one known mistake gives your answers on every input. Score the asked head in every run, then take the run with the largest drop from run 0.",  # noqa: E501
        "zh": "{title}：返回了 {got}，不是去掉后让 (layer, head) 的归纳分数降得最多的第 0 层头 {want}（输入：{case}）；没有哪一种已知错误能在每个输入上都给出你的答案。请在每次运行里给被问到的头打分，再取比第 0 次运行降得最多的那次。",  # noqa: E501
    },
}
_FIXES = {
    "same_token_not_next": {
        "en": "The target of query i is key j when `token_ids[j - 1] == token_ids[i]` and `j < i`.",
        "zh": "查询 i 的目标是满足 `token_ids[j - 1] == token_ids[i]` 且 `j < i` 的键 j。",
    },
    "current_included": {
        "en": "AND the targets with `torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)`.",
        "zh": "把目标与 `torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)` 取与（&）。",
    },
    "rows_without_target": {
        "en": "`rows = targets.any(dim=-1)`; `per_row[..., rows].mean(dim=-1)`.",
        "zh": "`rows = targets.any(dim=-1)`；`per_row[..., rows].mean(dim=-1)`。",
    },
    "probe_offset_used": {
        "en": "`targets[:, 1:] = token_ids[:, None] == token_ids[None, :-1]`, then `targets &= torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)`: the targets from the ids, not from T.",  # noqa: E501
        "zh": "`targets[:, 1:] = token_ids[:, None] == token_ids[None, :-1]`，再 `targets &= torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)`：目标从 ID 得出，而不是从 T 得出。",  # noqa: E501
    },
    "picked_by_pattern": {
        "en": "`scores = runs[:, layer, head, rows, rows - T//2 + 1].mean(-1)` with `rows = torch.arange(T//2, T)`; the answer is `int((scores[0] - scores[1:]).argmax())`.",  # noqa: E501
        "zh": "`scores = runs[:, layer, head, rows, rows - T//2 + 1].mean(-1)`，其中 `rows = torch.arange(T//2, T)`；答案是 `int((scores[0] - scores[1:]).argmax())`。",  # noqa: E501
    },
    "other_induction_head": {
        "en": "Index the head you are given: `runs[:, layer, head]`, not the strongest induction head.",
        "zh": "用给你的那个头做下标：`runs[:, layer, head]`，而不是最强的归纳头。",
    },
    "clean_run_counted": {
        "en": "`int((scores[0] - scores[1:]).argmax())`: `scores[1:]` starts at head 0.",
        "zh": "`int((scores[0] - scores[1:]).argmax())`：`scores[1:]` 从头 0 开始。",
    },
    "layer_ignored": {
        "en": "Index the layer you are given: `runs[:, layer, head, rows, rows - T//2 + 1]`.",
        "zh": "用给你的那一层做下标：`runs[:, layer, head, rows, rows - T//2 + 1]`。",
    },
    "copy_key_scored": {
        "en": "The key after the copy: `rows - T//2 + 1` with `rows = torch.arange(T//2, T)`.",
        "zh": "副本后面的那个键：`rows - T//2 + 1`，其中 `rows = torch.arange(T//2, T)`。",
    },
    "least_drop": {
        "en": "The drop is `scores[0] - scores[1:]`; take its argmax (or the argmin of `scores[1:]`).",
        "zh": "下降量是 `scores[0] - scores[1:]`；对它取 argmax（或者对 `scores[1:]` 取 argmin）。",
    },
}
