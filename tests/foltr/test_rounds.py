"""The compiled rounds (issue 60) give today's numbers to the bit: the whole loop against the
Python round loop it replaced, and each rewritten kernel against the form it replaced."""

import numba
import numpy as np
import pytest

from ltrlib.data import Dataset
from ltrlib.foltr import partition as P
from ltrlib.foltr.clicks import stack_click_models
from ltrlib.foltr.federated import run_federated
from ltrlib.foltr.pdgd import client_update, pl_sample
from ltrlib.foltr.rankers import make_ranker, score_rows
from ltrlib.foltr.rounds import numpy_sum


def _dataset(n_queries, seed, name, n_features=11):
    """Queries of 1 to 39 documents (single-document queries, lists shorter and longer than
    the ten shown, blocks of eight and remainders); labels follow feature 0."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, n_queries)
    n = int(sizes.sum())
    X = rng.random((n, n_features)).astype(np.float32)
    y = np.clip(np.floor(X[:, 0] * 5 + rng.normal(0, 0.5, n)), 0, 4).astype(np.int32)
    return Dataset(X=X, y=y, query_ids=np.arange(n_queries), offsets=np.concatenate([[0], np.cumsum(sizes)]),
                   category=rng.integers(0, 8, n).astype(np.int32), name=name)


@pytest.fixture(scope="module")
def data():
    return P.prepare_data(_dataset(40, 0, "train"), _dataset(15, 1, "test"))


def python_rounds(fed, ranker, n_rounds, *, seed, lr=0.1, mu=0.0, fedper=False, prox_every_interaction=True,
                  warmup_interactions=0, hidden=64):
    """The round loop as ltrlib ran it before the compiled rounds (7d3748a,
    ``_FederatedRun.play_round``): one `client_update` call per client and round, FedAvg
    and the online means in numpy. Returns the final global vector, the online NDCG per
    round, and FedPer's output layers. Its networks computed in float64."""
    spec = make_ranker(ranker, fed.n_features, hidden, "float64")
    child = np.random.SeedSequence(seed).spawn(2 + len(fed.clients))
    rng_sample = np.random.default_rng(child[1])
    rng_clients = [np.random.default_rng(c) for c in child[2:]]
    clicks = stack_click_models(fed.click_models)
    w_global = spec.init(np.random.default_rng(child[0]))

    def update(w, w_ref, mu_, prox, n, view, rng_client, buf):
        return client_update(spec.kind_id, spec.hidden, w, w_ref, mu_, prox, lr, n, fed.X, view.rows, view.labels,
                             view.q_off, view.ideal, view.model_choices, *clicks, rng_client, rng_sample, buf)

    if fed.shared is not None and warmup_interactions > 0:
        update(w_global, w_global.copy(), 0.0, False, warmup_interactions, fed.shared, rng_sample,
               np.zeros(warmup_interactions))
    out = spec.output_slice
    init_out = w_global[out].copy()
    local = [init_out.copy() for _ in fed.clients]
    buf = np.zeros(max(max(c.n_updates for c in fed.clients), 1))
    online = np.full(n_rounds, np.nan)
    for t in range(n_rounds):
        models, counts, means = np.empty((len(fed.clients), spec.n_params)), np.zeros(len(fed.clients)), []
        for c, view in enumerate(fed.clients):
            w = w_global.copy()
            if fedper:
                w[out] = local[c]
            counts[c] = update(w, w_global, mu, prox_every_interaction, view.n_updates, view, rng_clients[c], buf)
            models[c] = w
            if fedper:
                local[c] = w[out].copy()
            if counts[c]:
                means.append(buf[:int(counts[c])].mean())
        w_global = (counts / counts.sum()) @ models if counts.sum() > 0 else w_global.copy()
        if fedper:
            w_global[out] = init_out
        if means:
            online[t] = np.mean(means)
    return w_global, online, local


CASES = {
    "linear, IID": (lambda d: P.iid(d, 5, 5, "perfect"), "linear", {}),
    "neural, Type 1, FedPer": (lambda d: P.type1(d, True, seed=3, click="navigational"), "neural",
                               dict(fedper=True, hidden=8)),
    "linear, Type 2 #R = 2 (clients without queries), FedProx on updates":
        (lambda d: P.type2(d, True, R=2, n_clients=12, seed=1, click="informational"), "linear",
         dict(mu=0.1, prox_every_interaction=False)),
    "neural, Type 2 #R = 1, data sharing with a warm-up":
        (lambda d: P.with_data_sharing(P.type2(d, True, R=1, seed=2), d, 0.2, seed=2), "neural",
         dict(warmup_interactions=7, hidden=8)),
    "linear, Type 4 (B from 1 to 9), FedProx": (lambda d: P.type4(d, True, click="perfect", seed=4), "linear",
                                                dict(mu=1.0)),
    "linear, Type 3 PBM IID (a click model drawn each interaction)": (lambda d: P.type3(d, False, "pbm", 5), "linear",
                                                                       {}),
    "neural, B = 10 (online means over eight or more)": (lambda d: P.iid(d, 3, 10, "informational"), "neural",
                                                         dict(hidden=8)),
}


@pytest.mark.parametrize("case", CASES)
def test_compiled_rounds_give_the_python_loops_numbers_to_the_bit(data, case):
    """Where the arithmetic is kept (networks in float64), every number is the old loop's."""
    build, ranker, kw = CASES[case]
    fed = build(data)
    res = run_federated(fed, ranker, 13, seed=5, eval_every=4, precision="float64", **kw)
    w_global, online, local = python_rounds(fed, ranker, 13, seed=5, **kw)
    np.testing.assert_array_equal(res.weights, w_global)
    np.testing.assert_array_equal(res.online.online_ndcg.to_numpy(), online)
    if kw.get("fedper"):
        out = make_ranker(ranker, fed.n_features, kw["hidden"]).output_slice
        for personalised, layer in zip(res.client_weights, local):
            np.testing.assert_array_equal(personalised[out], layer)
    assert np.isfinite(online).any()  # the runs interacted


@numba.njit(cache=True)
def _pl_sample_afresh(scores, n, k, rng, ranking, pos_max, pos_sum, placed):
    # Plackett-Luce sampling as it was (7d3748a): every exponential computed afresh, twice
    # a position.
    for i in range(n):
        placed[i] = False
    for p in range(k):
        m = -np.inf
        for i in range(n):
            if not placed[i] and scores[i] > m:
                m = scores[i]
        total = 0.0
        for i in range(n):
            if not placed[i]:
                total += np.exp(scores[i] - m)
        pos_max[p] = m
        pos_sum[p] = total
        u = rng.random() * total
        acc = 0.0
        pick = -1
        for i in range(n):
            if not placed[i]:
                acc += np.exp(scores[i] - m)
                pick = i
                if u < acc:
                    break
        placed[pick] = True
        ranking[p] = pick


def test_plackett_luce_sampling_keeps_its_draws_with_each_exponential_taken_once():
    rng = np.random.default_rng(0)
    for trial in range(400):
        n = int(rng.integers(1, 60))
        k = min(10, n)
        scores = rng.normal(0, [0.01, 1, 30][trial % 3], n)
        if trial % 4 == 0:
            scores = np.round(scores)  # ties, and a maximum shared by several documents
        outs = []
        for fn, extra in ((pl_sample, (np.empty(n),)), (_pl_sample_afresh, ())):
            bufs = np.empty(n, dtype=np.int64), np.empty(n), np.empty(n), np.empty(n, dtype=np.bool_)
            draw = np.random.default_rng(trial)
            fn(scores, n, k, draw, *bufs, *extra)
            outs.append((bufs[0][:k].copy(), bufs[1][:k].copy(), bufs[2][:k].copy(), draw.random()))
        (r1, m1, s1, next1), (r2, m2, s2, next2) = outs
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(m1, m2)
        np.testing.assert_array_equal(s1, s2)
        assert next1 == next2  # the same number of uniforms drawn


def test_linear_scores_of_eight_documents_at_once_are_the_one_document_sums():
    rng = np.random.default_rng(1)
    X = rng.normal(0, 10, (200, 37)).astype(np.float32)
    w = rng.normal(0, 1, 37)
    rows = rng.permutation(200)
    for a, b in ((0, 1), (3, 10), (10, 18), (20, 43), (50, 200)):
        got = np.empty(b - a)
        score_rows(0, 1, w, X, rows, a, b, got, np.empty((b - a, 1)))
        want = np.empty(b - a)
        for i, r in enumerate(rows[a:b]):
            s = 0.0
            for f in range(X.shape[1]):
                s += w[f] * float(X[r, f])
            want[i] = s
        np.testing.assert_array_equal(got, want)


def test_sums_are_numpys_to_the_bit():
    rng = np.random.default_rng(2)
    for n in [*range(1, 300), 1000, 3001, 10_007]:
        a = rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3, size=n)
        assert numpy_sum(a, n) == a.sum(), n


@pytest.mark.parametrize("setting", ["iid", "type1"])
def test_float32_networks_draw_the_float64_curves_within_their_run_to_run_spread(data, setting):
    """float32 cannot keep float64's bits; it must keep its curves. Five runs a precision
    (the same five seeds): at every offline evaluation and for the cumulative online NDCG,
    the two means differ by less than one standard error of the five runs' spread (their
    pooled standard deviation / sqrt(5)). Runs whose Plackett-Luce draws never flip
    coincide; a wrong float32 kernel moves the curves by far more than the spread."""
    from ltrlib.foltr.simulate import Job, run_job

    curves, online = {}, {}
    for precision in ("float64", "float32"):
        runs = [run_job(data, Job(setting, True, "neural", "informational", seed=s, n_rounds=60, eval_every=10,
                                  precision=precision)) for s in range(5)]
        curves[precision] = np.array([off.value.to_numpy() for off, _, _ in runs])
        online[precision] = np.array([row["cumulative_online"] for _, row, _ in runs])
    for values in (curves, online):
        spread = np.sqrt((values["float64"].std(axis=0, ddof=1) ** 2 + values["float32"].std(axis=0, ddof=1) ** 2) / 2)
        gap = np.abs(values["float32"].mean(axis=0) - values["float64"].mean(axis=0))
        assert np.all(spread > 0)  # the seeds differ, so the spread is a real yardstick
        assert np.all(gap <= spread / np.sqrt(5)), (gap, spread)


def test_the_networks_train_in_their_precision(data):
    """The client vectors and FedPer's layers are float32 by default and float64 on request;
    the trained ranker hands its weights on as float64, and an unknown precision is refused."""
    fed = P.iid(data, 3, 5, "perfect")
    for precision, dtype in (("float32", np.float32), ("float64", np.float64)):
        spec = make_ranker("neural", fed.n_features, 8, precision)
        assert spec.dtype is dtype and spec.init(np.random.default_rng(0)).dtype == dtype
        res = run_federated(fed, "neural", 3, seed=1, eval_every=3, hidden=8, precision=precision, fedper=True)
        assert res.weights.dtype == np.float64 and all(w.dtype == dtype for w in res.client_weights)
    assert make_ranker("linear", 4, precision="float32").dtype is np.float64
    with pytest.raises(ValueError, match="precision must be one of"):
        make_ranker("neural", 4, precision="float16")


def test_float32_network_computes_the_float64_scores_and_gradients_to_float32_accuracy():
    from ltrlib.foltr.rankers import add_neural_gradients

    rng = np.random.default_rng(3)
    F, H, n = 23, 16, 30
    X = rng.random((n, F)).astype(np.float32)
    rows = rng.permutation(n)
    w64 = make_ranker("neural", F, H, "float64").init(rng) * 20  # hidden units far into both tails
    w32 = w64.astype(np.float32)
    docs, coefs = np.array([3, 0, 17]), np.array([0.8, -0.3, -0.5])
    out = {}
    for w in (w64, w32):
        scores, hid, grad = np.empty(n), np.empty((n, H), dtype=w.dtype), np.zeros(len(w), dtype=w.dtype)
        score_rows(1, H, w, X, rows, 0, n, scores, hid)
        add_neural_gradients(H, w, X, rows, 0, docs, coefs, 3, hid, grad)
        out[w.dtype] = scores, hid, grad
    for a, b in zip(out[np.dtype(np.float64)], out[np.dtype(np.float32)]):
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6 * np.abs(a).max())


def test_the_float32_sigmoid_is_the_float64_one_to_float32_accuracy():
    from ltrlib.foltr.rankers import _sigmoid_row32

    z = np.concatenate([np.linspace(-90, 90, 4001), [-1e4, 1e4, 0.0, -0.0, 1e-8]]).astype(np.float32)
    out, bits = np.empty_like(z), np.empty(len(z), dtype=np.int32)
    _sigmoid_row32(z, out, bits)
    with np.errstate(over="ignore"):  # exp(1e4) is inf in float64 too, and 1 / inf the limit 0
        exact = 1.0 / (1.0 + np.exp(-z.astype(np.float64)))
    normal = exact > 1e-37  # below, float32 holds denormals at best: both are ~0
    np.testing.assert_allclose(out[normal], exact[normal], rtol=2e-7)
    assert np.all(out[~normal] < 1e-37) and np.all(out >= 0) and np.all(out <= 1)
    assert out[-3] == out[-2] == np.float32(0.5)
