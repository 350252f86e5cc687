"""The explorer's pictures and controls as a lecturer shows them (issue 39, section 1): the stars' colours, the
effect caveat, the design kinds' starting values and the enlarged design picture. The page itself is seen in
tests/test_explorer_browser.py."""
from __future__ import annotations

import struct

import pandas as pd
import pytest

from simdesign.core.designs import DESIGN_KINDS
from simdesign.explore import controls, curves
from test_explore import finished  # the explorer tests' poll for a run's end

flask = pytest.importorskip("flask", reason="the explorer needs the 'explore' extra (flask)")

FORM = {"model": "coherence", "effect": "zero", "kind": "block", "blocks": "4", "docs_per_block": "5",
        "annotators_per_block": "3", "tests": ["ttest", "ttest_doc", "art_block"], "trials": "20", "seed": "7"}
BLACK = "#000000"


def figure5_like(effect: str = "fitted") -> pd.DataFrame:
    """The tests of the paper's Figure 5 table (a mixed model and art_block), a few designs."""
    return pd.DataFrame([{"design": f"block-B{b}-D5-A3", "annotators": 3 * b, "test": test, "estimand": "power",
                          "rate": rate, "ci_low": rate - 0.05, "ci_high": rate + 0.05, "effect": effect}
                         for b in (1, 4, 20) for test, rate in (("clmm_native[z,paper]", 0.6), ("art_block", 0.4))])


def live_rows(*tests: str) -> list[dict]:
    return [{"test": test, "method": "likert", "estimand": "power", "rate": 0.5, "ci_low": 0.45, "ci_high": 0.55}
            for test in tests]


def drawn_star_colours(figure) -> dict:
    """Test name -> the colour of the star drawn for it (from the axes' error bars and their labels)."""
    from matplotlib.colors import to_hex

    return {container.get_label().split(":")[0]: to_hex(container.lines[0].get_color())
            for container in figure.axes[0].containers}


def test_a_star_has_its_curves_colour_and_a_test_without_a_curve_a_colour_of_its_own():
    figure = curves.draw_position(figure5_like(), "power", live_rows("ttest", "art_block", "art_doc"), 60, "t")
    colours = figure.colours
    drawn = drawn_star_colours(figure)
    assert drawn == colours["stars"]
    assert colours["stars"]["art_block"] == colours["curves"]["art_block"]  # the star reads as a point of its curve
    own = [colours["stars"][name] for name in ("ttest", "art_doc")]
    # the paper's tests have no curve in Figure 5: each its own colour, none black, none a curve's
    assert len(set(own)) == 2 and BLACK not in own and not set(own) & set(colours["curves"].values())
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert "ttest: your design (no curve here)" in legend and "art_block: your design" in legend


def test_many_tests_without_curves_still_get_colours_of_the_cycle():
    tests = [f"test{i}" for i in range(14)]
    colours = curves.star_colours(tests, {"art_block": "#1f77b4"})
    assert BLACK not in colours.values() and "#1f77b4" not in colours.values()
    assert len(set(colours[t] for t in tests[:9])) == 9  # the cycle's ten colours less the curve's one


def test_the_caveat_names_both_effects_when_they_differ_and_is_absent_when_they_agree():
    table = figure5_like()
    caveat = curves.effect_caveat(table, "power", 0.5)
    assert "0.5 x the fitted effects" in caveat and "the fitted effects (scale 1)" in caveat
    assert curves.effect_caveat(table, "power", 1.0) is None  # 'fitted' and a scale of 1 are one effect
    assert curves.effect_caveat(figure5_like("x0.5"), "power", 0.5) is None
    assert "0.5 x" in curves.effect_caveat(figure5_like("x0.5"), "power", 1.0)
    assert curves.effect_caveat(table.drop(columns="effect"), "power", 0.5) is None  # the table does not say
    figure = curves.draw_position(table, "power", live_rows("art_block"), 60, "t", caveat)
    assert caveat.split(":")[0] in " ".join(t.get_text().replace("\n", " ") for t in figure.texts)
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert "art_block: your design (your effect)" in legend


@pytest.fixture
def shipped_client():
    from simdesign.explore.app import create_app

    app = create_app(workers=0)
    yield app.test_client()
    app.extensions["simdesign_pool"].close()


@pytest.mark.slow  # two short power runs: a second or more
def test_the_server_says_the_caveat_of_a_scaled_effect_and_the_colours_it_drew(shipped_client):
    client = shipped_client
    for effect, scale, caveat in (("scale", "0.5", True), ("fitted", "1.0", False)):
        form = {**FORM, "effect": effect, "effect_scale": scale}
        key = client.post("/api/check", json=form).get_json()["run"]["key"]
        assert finished(client, key)["status"] == "done"
        view = client.get(f"/api/position/{key}").get_json()
        assert view["table"] == "paper_fig5_coherence" and view["picture"]
        assert ("0.5 x the fitted effects" in view["caveat"]) is caveat, view["caveat"]
        stars, drawn_curves = view["colours"]["stars"], view["colours"]["curves"]
        assert set(stars) == {"ttest", "ttest_doc", "art_block"}
        assert stars["art_block"] == drawn_curves["art_block"] and BLACK not in stars.values()


@pytest.mark.parametrize("kind", sorted(DESIGN_KINDS))
def test_every_design_kind_starts_at_a_design_the_server_accepts(kind):
    """Choosing a kind fills its fields with these values: none may be empty ("got None") or refused."""
    spec = controls.options()["designs"][kind]
    assert all(spec["defaults"][name] for name in spec["fields"]), spec
    form = {**controls.DEFAULTS, "kind": kind, **spec["defaults"]}
    checked = controls.check_controls(form)
    assert checked.errors == {} and checked.config.designs[0].kind == kind, checked.errors


@pytest.fixture
def client(tmp_path):
    from simdesign.explore.app import create_app

    app = create_app(workers=0, figures_dir=tmp_path / "figures", configs_dir=curves.DEFAULT_CONFIGS)
    yield app.test_client()
    app.extensions["simdesign_pool"].close()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])  # the IHDR chunk's width and height


@pytest.mark.slow  # two drawings: half a second or more
def test_the_enlarge_view_gets_the_design_drawn_for_a_projectors_width(client):
    answer = client.post("/api/check", json={**FORM, "start": False}).get_json()
    small, large = (png_size(client.get(answer[key]).data) for key in ("picture", "picture_large"))
    assert large[0] >= 1024 and large[0] > 2 * small[0]  # a projector's width, not the page's picture scaled up
    assert abs(large[0] / large[1] - small[0] / small[1]) < 0.01  # the same picture
    # a design that is good while another control is not is still drawn, and enlarged
    answer = client.post("/api/check", json={**FORM, "trials": "x", "start": False}).get_json()
    assert set(answer["errors"]) == {"trials"} and client.get(answer["picture_large"]).status_code == 200
    answer = client.post("/api/check", json={**FORM, "blocks": "-1", "start": False}).get_json()
    assert answer["picture"] is None and answer["picture_large"] is None
