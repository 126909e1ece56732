"""The ADL benchmark's pieces: the event generator, the kinematics, and the eight Awkward
queries against a plain per-event reference (values and histogram counts equal exactly)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import adl_events  # noqa: E402
import adl_kinematics as kin  # noqa: E402
import adl_reference  # noqa: E402

N_EVENTS = 2000


@pytest.fixture(scope="module")
def events():
    return adl_events.generate(N_EVENTS, seed=7)


# ---------------------------------------------------------------- the generator
def test_generator_is_seeded_and_shaped_like_nanoaod(events):
    again = adl_events.generate(N_EVENTS, seed=7)
    other = adl_events.generate(N_EVENTS, seed=8)
    assert np.array_equal(events.jets.pt, again.jets.pt)
    assert np.array_equal(events.muons.offsets, again.muons.offsets)
    assert not np.array_equal(events.met_pt, other.met_pt)
    assert len(events) == N_EVENTS and events.met_pt.dtype == events.met_phi.dtype == np.float32
    for coll, fields, mean, eta_max in ((events.jets, adl_events.JET_FIELDS, 4.0, 4.7),
                                        (events.muons, adl_events.LEPTON_FIELDS, 1.2, 2.5),
                                        (events.electrons, adl_events.LEPTON_FIELDS, 1.0, 2.5)):
        assert tuple(coll.fields) == fields
        assert coll.offsets.dtype == np.int64 and coll.offsets.shape == (N_EVENTS + 1,)
        assert coll.offsets[0] == 0 and np.all(np.diff(coll.offsets) >= 0)
        n = int(coll.offsets[-1])
        for name, values in coll.fields.items():
            assert values.shape == (n,)
            assert values.dtype == (np.int32 if name == "charge" else np.float32), name
        assert abs(coll.counts.mean() - mean) < 0.1  # Poisson(mean): sd of the mean ~0.045
        assert abs(coll.counts.var() - mean) < 0.4
        assert np.all(np.abs(coll.eta) < eta_max) and coll.eta.std() > 0.5
        assert np.all((coll.phi >= -np.pi) & (coll.phi < np.pi))
        assert np.all(coll.pt > 0) and np.median(coll.pt) < 60
    assert np.all(events.jets.pt >= 15) and np.all((events.jets.btag >= 0) &
                                                   (events.jets.btag < 1))
    assert np.all((events.jets.mass > 0) & (events.jets.mass < events.jets.pt))
    assert set(np.unique(events.muons.charge)) == {-1, 1}
    assert np.all(events.muons.mass == np.float32(adl_events.MUON_MASS))
    assert 15 < np.median(events.met_pt) < 40 and np.all(events.met_pt >= 0)
    with pytest.raises(ValueError, match="n_events"):
        adl_events.generate(-1)


def test_generator_empty_and_event_access():
    ev = adl_events.generate(0)
    assert len(ev) == 0 and ev.jets.offsets.tolist() == [0] and ev.jets.pt.size == 0
    ev = adl_events.generate(5, seed=1)
    first = ev.jets.event(0)
    lo, hi = ev.jets.offsets[:2]
    assert np.array_equal(first["eta"], ev.jets.eta[lo:hi])


def test_awkward_and_lazyk_views_hold_the_same_values(events):
    ak = pytest.importorskip("awkward")
    a = adl_events.to_awkward(events)
    assert len(a) == N_EVENTS
    assert str(a.Jet.type.content) == ("var * {pt: float32, eta: float32, phi: float32, "
                                       "mass: float32, btag: float32}")
    assert ak.to_list(a.Muon.charge[:50]) == [
        events.muons.charge[lo:hi].tolist()
        for lo, hi in zip(events.muons.offsets[:50], events.muons.offsets[1:51])]
    assert np.array_equal(ak.to_numpy(a.MET.pt), events.met_pt)
    # no copy: Awkward's content is the generator's buffer
    assert np.shares_memory(ak.to_numpy(ak.flatten(a.Jet.pt)), events.jets.pt)
    lz = adl_events.to_lazyk(adl_events.generate(200, seed=3))
    small = adl_events.to_awkward(adl_events.generate(200, seed=3))
    assert str(lz["Electron_eta"].type) == "200 * var * float32"
    assert lz["Electron_eta"].to_list() == ak.to_list(small.Electron.eta)
    assert lz["met_phi"].to_list() == ak.to_list(small.MET.phi)


# ---------------------------------------------------------------- the kinematics
def test_kinematics_textbook_values():
    # two massless back-to-back particles of pt 45 at eta 0: m = 90, the sum has pt 0
    p = [kin.p4(np.float32(45), np.float32(0), np.float32(phi), np.float32(0))
         for phi in (0.0, np.pi)]
    s = [a + b for a, b in zip(*p)]
    assert kin.mass(*s) == pytest.approx(90.0, rel=1e-12)
    assert kin.pt(s[0], s[1]) == pytest.approx(0.0, abs=1e-5)
    # the same against math on the definitions, with masses and eta
    pt1, eta1, phi1, m1 = 30.0, 1.2, 0.4, 5.0
    pt2, eta2, phi2, m2 = 50.0, -0.7, 2.9, 0.1
    px, py, pz, e = (sum(v) for v in zip(kin.p4(np.float32(pt1), np.float32(eta1),
                                                np.float32(phi1), np.float32(m1)),
                                         kin.p4(np.float32(pt2), np.float32(eta2),
                                                np.float32(phi2), np.float32(m2))))
    f = [float(np.float32(v)) for v in (pt1, eta1, phi1, m1, pt2, eta2, phi2, m2)]
    e1 = math.sqrt((f[0] * math.cosh(f[1])) ** 2 + f[3] ** 2)
    e2 = math.sqrt((f[4] * math.cosh(f[5])) ** 2 + f[7] ** 2)
    want = math.sqrt(2 * (e1 * e2 - f[0] * f[4] * (math.cos(f[2] - f[6]) +
                                                   math.sinh(f[1]) * math.sinh(f[5])))
                     + f[3] ** 2 + f[7] ** 2)
    assert kin.mass(px, py, pz, e) == pytest.approx(want, rel=1e-12)
    assert isinstance(kin.mass(px, py, pz, e), np.float64)
    # dphi wraps into [-pi, pi); dR; mT
    assert kin.delta_phi(np.float32(3.0), np.float32(-3.0)) == pytest.approx(6.0 - 2 * np.pi,
                                                                           rel=1e-6)
    assert kin.delta_phi(0.0, np.pi) == pytest.approx(-np.pi)
    assert kin.delta_r(0.0, 3.0, 0.3, -3.0) == pytest.approx(math.hypot(0.3, 6 - 2 * np.pi))
    assert kin.transverse_mass(40.0, 0.0, 40.0, np.pi) == pytest.approx(80.0)
    assert kin.transverse_mass(40.0, 1.0, 40.0, 1.0) == 0.0
    # float32 in, float64 out, on arrays too
    out = kin.p4(*(np.ones(3, np.float32) for _ in range(4)))
    assert all(c.dtype == np.float64 for c in out)


# ---------------------------------------------------------------- Awkward against the reference
def test_histogram_rules_differ_only_on_edges():
    bh = pytest.importorskip("boost_histogram")
    values = np.array([0.0, 1.5, 58.0, 57.99999, 199.99, 200.0, -1.0, np.nan], np.float32)
    h = bh.Histogram(bh.axis.Regular(100, 0.0, 200.0), storage=bh.storage.Int64())
    h.fill(values)
    boost = adl_reference.regular_counts(values, 100, 0.0, 200.0)
    assert np.array_equal(h.values(), boost)
    numpy = adl_reference.numpy_counts(values, 100, 0.0, 200.0)
    # 58.0 lies on an edge: (58 / 200) * 100 rounds below 29 in doubles; 200.0 overflows
    assert boost[28] == 2 and numpy[28] == 1 and numpy[29] == 1
    assert boost[99] == 1 and numpy[99] == 2
    assert boost.sum() == 5 and numpy.sum() == 6


@pytest.mark.parametrize("query", ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8"])
def test_awkward_query_equals_reference(events, query):
    pytest.importorskip("awkward")
    pytest.importorskip("boost_histogram")
    import adl_awkward  # needs both

    got = adl_awkward.QUERIES[query](adl_events.to_awkward(events))
    want = adl_reference.QUERIES[query](events)
    assert sorted(got) == sorted(want)
    for name, values in want.items():
        g = got[name]
        # the per-event values, in event order, to the last bit
        assert g.values.dtype == values.dtype, name
        assert np.array_equal(g.values, values), name
        bins, lo, hi = adl_awkward.BINS[name]
        assert np.array_equal(g.hist.values(), adl_reference.regular_counts(values, bins, lo, hi))
        assert np.array_equal(np.histogram(g.values, bins, (lo, hi))[0],
                              adl_reference.numpy_counts(values, bins, lo, hi))
        # the query selects something, and not everything where it selects events
        entries = int(g.hist.values().sum())
        assert entries > 20, (name, entries)
        if query in ("Q4", "Q5", "Q6", "Q7", "Q8"):
            assert len(values) < N_EVENTS, name


@pytest.mark.parametrize("query", sorted(adl_reference.QUERIES))
def test_lazyk_query_equals_reference(events, query):
    # the lazyk port (Awkward's code with ak. replaced by lazyk.): its histogram counts
    # equal numpy.histogram's of the per-event reference values
    import adl_lazyk

    got = adl_lazyk.run(adl_lazyk.QUERIES[query], adl_lazyk.events(adl_events.to_lazyk(events)))
    want = adl_reference.QUERIES[query](events)
    assert sorted(got) == sorted(want)
    for name, values in want.items():
        bins, lo, hi = adl_lazyk.BINS[name]
        assert got[name].dtype == np.int64, name
        np.testing.assert_array_equal(got[name], adl_reference.numpy_counts(values, bins, lo, hi),
                                      err_msg=name)


@pytest.mark.parametrize("query", ["Q4", "Q5", "Q7", "Q8"])
def test_lazyk_query_on_events_read_from_awkward(events, query):
    # the same port on `lazyk.from_awkward` of Awkward's events: an array of records,
    # selected and gathered field by field (`ev[mask]`, `jets[jets.pt > 30]`)
    pytest.importorskip("awkward")
    import adl_lazyk

    import lazyk
    ev = lazyk.from_awkward(adl_events.to_awkward(events))
    got = adl_lazyk.run(adl_lazyk.QUERIES[query], ev)
    for name, values in adl_reference.QUERIES[query](events).items():
        bins, lo, hi = adl_lazyk.BINS[name]
        np.testing.assert_array_equal(got[name], adl_reference.numpy_counts(values, bins, lo, hi),
                                      err_msg=name)


@pytest.mark.parametrize("query", ["Q5", "Q8"])
def test_lazyk_query_on_dask_partitions_of_awkward_events(events, query):
    # the port over a Dask collection of those records (`lazyk.dask.from_ragged`): events
    # selected (`ev[mask]`) and lists of records counted (`num(ev.Muon)`) per partition
    pytest.importorskip("awkward")
    dask = pytest.importorskip("dask")
    import adl_lazyk

    import lazyk
    import lazyk.dask
    ev = lazyk.dask.from_ragged(lazyk.from_awkward(adl_events.to_awkward(events)), 700)
    hists = adl_lazyk.QUERIES[query](ev)
    with dask.config.set(scheduler="sync"):
        got = {k: lazyk.dask.evaluate(h).compute() for k, h in hists.items()}
    for name, values in adl_reference.QUERIES[query](events).items():
        bins, lo, hi = adl_lazyk.BINS[name]
        counts = got[name][0] if isinstance(got[name], tuple) else got[name]
        np.testing.assert_array_equal(counts, adl_reference.numpy_counts(values, bins, lo, hi),
                                      err_msg=name)
