"""kvplan plot: chart data from sweep rows, terminal charts, and PNG/SVG files that are real images."""

import struct
import xml.etree.ElementTree as ET

import pytest

from kvplan.analysis import plotting, sweep as sw
from kvplan.requests.build import build_request
from kvplan import engines

from conftest import CONFIGS

MODEL = CONFIGS / "llama-3.1-8b.json"
GiB = 2**30


def _rows(**axes):
    grid = sw.Grid(**axes)

    def make(combo, seq, batch):
        return build_request(str(MODEL), seq=str(seq), batch=batch, kv_dtype=combo.kv_dtype, dtype=None, gpu=combo.gpu, gpu_mem=None,
                             gpus=None, tp=combo.tp, pp=combo.pp)

    return list(sw.rows(grid, make, engines.get, model="llama-3.1-8b"))


def test_capacity_chart_data():
    rows = _rows(seq=(1024, 8192, 131072), batch=(8,), kv_dtype=("bf16", "fp8"), gpu=("h100-sxm-80gb", "l40s-48gb"))
    chart = plotting.capacity_chart(rows, model="llama-3.1-8b", batch=8)
    curves = {s.label: s for s in chart.series if not s.limit}
    limits = {s.label: s for s in chart.series if s.limit}
    # one curve per KV dtype (the memory needed does not depend on the GPU); one limit per GPU, one for the weights
    assert set(curves) == {"KV bf16", "KV fp8_e4m3"}
    assert set(limits) == {"weights alone (per GPU)", "usable: h100-sxm-80gb", "usable: l40s-48gb"}
    weights = 2 * 8_030_261_248
    assert curves["KV bf16"].ys[-1] == pytest.approx((weights + 8 * 131072 * 131072) / GiB)
    assert curves["KV fp8_e4m3"].ys[0] == pytest.approx((weights + 8 * 1024 * 65536) / GiB)
    assert limits["weights alone (per GPU)"].ys[0] == pytest.approx(weights / GiB)


def test_concurrency_chart_data_and_log_scale():
    rows = _rows(seq=(1024, 32768, 131072), gpu=("h100-sxm-80gb",), tp=(1, 2))
    chart = plotting.concurrency_chart(rows, model="m")
    assert [s.label for s in chart.series] == ["TP1", "TP2"]
    assert chart.series[0].ys == tuple(float(r.max_batch) for r in rows if r.tp == 1)
    # by hand, Llama-3.1-8B on one H100 (85,029,158,912 B, 90% usable, 16,060,522,496 B of bf16 weights) and on each of
    # two (half the weights, half the heads: 65,536 B a token a rank instead of 131,072)
    usable = 85_029_158_912 * 9 // 10
    tp1 = tuple(float((usable - 16_060_522_496) // (131072 * s)) for s in (1024, 32768, 131072))
    tp2 = tuple(float((usable - 8_030_261_248) // (65536 * s)) for s in (1024, 32768, 131072))
    assert chart.series[0].ys == tp1 == (450.0, 14.0, 3.0) and chart.series[1].ys == tp2 == (1020.0, 31.0, 7.0)
    assert chart.y_log  # 1K to 128K spans more than 50x


def test_concurrency_needs_a_gpu():
    from kvplan.core.errors import InputError

    with pytest.raises(InputError, match="needs a GPU"):
        plotting.concurrency_chart(_rows(seq=(1024, 2048)), model="m")


def test_terminal_chart(cli):
    code, out, err = cli("plot", MODEL, "--gpu", "h100,l40s", "--kv-dtype", "bf16,fp8", "--batch", "8", "--width", "60", "--height", "12")
    assert code == 0, err
    lines = out.splitlines()
    # the capacity chart is the textbook's picture (static by default), and its title says so
    assert lines[0] == "llama-3.1-8b: weights + KV cache of 8 sequences vs context (textbook: no engine overhead)"
    plot_rows = [line for line in lines if "┤" in line]
    # --width 60 columns of plot area; a row ends at its last mark (no trailing spaces), the widest one at the edge
    areas = [line.split("┤", 1)[1] for line in plot_rows]
    assert len(plot_rows) == 12 and all(len(a) <= 60 for a in areas) and max(len(a) for a in areas) == 60
    assert "●" in out and "▲" in out and "usable: h100-sxm-80gb" in out and "128K" in out
    code, out, _ = cli("plot", MODEL, "--kind", "concurrency", "--gpu", "h100", "--tp", "1,2", "--seq", "2K..64K")
    assert code == 0 and "(log scale)" in out and "TP2" in out


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_png_is_a_real_image(cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "capacity.png"
    code, _, err = cli("plot", MODEL, "--gpu", "h100,l40s", "--kv-dtype", "bf16,fp8", "-o", out)
    assert code == 0, err
    width, height = _png_size(out)
    assert (width, height) == (1080, 624)  # 9 x 5.2 inches at 120 dpi
    assert out.stat().st_size > 20_000
    from matplotlib.image import imread

    pixels = imread(out)
    colours = {tuple(p) for p in pixels.reshape(-1, pixels.shape[-1])[::7].round(2).tolist()}
    assert len(colours) > 50  # curves, text and grid, not a blank canvas
    assert (pixels[..., :3].mean(axis=2) < 0.5).mean() > 0.005  # some dark ink


def test_svg_is_a_real_image(cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "concurrency.svg"
    code, _, err = cli("plot", MODEL, "--kind", "concurrency", "--gpu", "h100,a100-80gb", "--tp", "1,2", "-o", out)
    assert code == 0, err
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    paths = root.iter("{http://www.w3.org/2000/svg}path")
    assert sum(1 for _ in paths) > 40
    assert "concurrent sequences" in out.read_text()


def test_format_flag_and_bad_extension(cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "chart"
    code, _, err = cli("plot", MODEL, "--format", "png", "-o", out)
    assert code == 0, err
    assert _png_size(out)[0] > 0
    code, _, err = cli("plot", MODEL, "-o", tmp_path / "chart.pdf")
    assert code == 2 and ".png or .svg" in err


def test_missing_matplotlib_exits_2_with_the_extra(cli, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    code, out, err = cli("plot", MODEL, "-o", tmp_path / "x.png")
    assert code == 2 and "pip install 'kvplan[plot]'" in err and not (tmp_path / "x.png").exists()


def test_plot_errors(cli):
    code, _, err = cli("plot", MODEL, "--seq", "8K")
    assert code == 2 and "two context lengths" in err
    code, _, err = cli("plot", MODEL, "--kind", "concurrency")
    assert code == 2 and "needs a GPU" in err


def test_token_labels():
    assert [plotting.token_label(n) for n in (1000, 1024, 131072, 1 << 20, 3000)] == ["1,000", "1K", "128K", "1M", "3,000"]
