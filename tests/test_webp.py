"""attnmarl.site.webp: the built book's figures as lossless WebP, the same pixels and resolution."""
from __future__ import annotations

import io

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from attnmarl.notebook.viz import FIGURE_DPI, PIXEL_DENSITY, figure_png
from attnmarl.site.webp import figures_to_webp, webp_bytes, webp_dpi


def book_figure() -> bytes:
    fig, ax = plt.subplots(figsize=(4, 2.5))
    x = np.linspace(0, 6, 200)
    for k in range(3):
        ax.plot(x, np.sin(x + k), label=f"seed {k}")
    ax.fill_between(x, np.sin(x) - 0.2, np.sin(x) + 0.2, alpha=0.3)
    ax.legend()
    png, _ = figure_png(fig)
    plt.close(fig)
    return png


def test_a_book_figure_becomes_the_same_pixels_at_the_same_dpi_in_fewer_bytes(tmp_path):
    png = tmp_path / "f.png"
    png.write_bytes(book_figure())
    data = webp_bytes(png)
    assert len(data) < png.stat().st_size
    with Image.open(png) as a, Image.open(io.BytesIO(data)) as b:
        assert b.format == "WEBP" and a.size == b.size
        assert np.array_equal(np.asarray(a.convert("RGB")), np.asarray(b.convert("RGB")))
    (tmp_path / "f.webp").write_bytes(data)
    with Image.open(png) as a:  # the PNG stores pixels per metre: 199.9996 dpi
        assert webp_dpi(tmp_path / "f.webp") == a.info["dpi"][0] == pytest.approx(FIGURE_DPI * PIXEL_DENSITY, rel=1e-5)


def test_transparency_survives(tmp_path):
    rgba = np.zeros((20, 30, 4), dtype=np.uint8)
    rgba[5:15, 5:25] = (200, 30, 30, 255)
    rgba[:, :5, 3] = 128
    Image.fromarray(rgba).save(tmp_path / "t.png")
    with Image.open(io.BytesIO(webp_bytes(tmp_path / "t.png"))) as b:
        assert np.array_equal(np.asarray(b.convert("RGBA")), rgba)


def test_the_build_step_converts_images_and_repoints_every_page(tmp_path):
    images = tmp_path / "_images"
    images.mkdir()
    (images / "fig.png").write_bytes(book_figure())
    (tmp_path / "book").mkdir()
    page = tmp_path / "book" / "ch.html"
    page.write_text('<img src="../_images/fig.png" alt="a"><a href="../_images/fig.png.txt">x</a>')
    other = tmp_path / "index.html"
    other.write_text('<img src="_images/fig.png">')
    before = (images / "fig.png").stat().st_size
    sizes = figures_to_webp(tmp_path)
    assert not (images / "fig.png").exists() and (images / "fig.webp").is_file()
    assert sizes["_images"] == (before, (images / "fig.webp").stat().st_size)
    assert page.read_text() == '<img src="../_images/fig.webp" alt="a"><a href="../_images/fig.png.txt">x</a>'
    assert other.read_text() == '<img src="_images/fig.webp">'
