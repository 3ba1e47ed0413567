"""Figures of the sample book: vector diagrams drawn with pymupdf shapes and two raster images.

Every figure is a function ``draw(canvas)`` registered in ``FIGURES`` with its height in points.
The raster figures are computed pixel by pixel (deterministic, no randomness without a seed),
wrapped in a ``pymupdf.Pixmap`` and inserted as PNG. Used by ``build_sample_book.py``.
"""
from __future__ import annotations

import math
import random

import pymupdf

ARTERY = (0.72, 0.12, 0.12)
VEIN = (0.18, 0.28, 0.66)
INK = (0.15, 0.15, 0.15)
GREY = (0.55, 0.55, 0.55)
PALE_RED = (0.96, 0.78, 0.76)


class Canvas:
    """A figure's rectangle on a page, in unit coordinates (0..1 across, 0..1 down)."""

    def __init__(self, page, rect, writer, fonts):
        self.page, self.rect, self.writer, self.fonts = page, rect, writer, fonts
        self.shape = page.new_shape()

    def pt(self, u, v):
        r = self.rect
        return pymupdf.Point(r.x0 + u * r.width, r.y0 + v * r.height)

    def path(self, uvs, color=INK, width=1.0, fill=None, dashes=None, closed=False):
        pts = [self.pt(u, v) for u, v in uvs]
        self.shape.draw_polyline(pts)
        self.shape.finish(color=color, width=width, fill=fill, dashes=dashes, closePath=closed,
                          lineCap=1, lineJoin=1)

    def bezier(self, uvs, color=INK, width=1.0):
        self.shape.draw_bezier(*[self.pt(u, v) for u, v in uvs])
        self.shape.finish(color=color, width=width, closePath=False, lineCap=1)

    def circle(self, u, v, radius, color=INK, fill=None, width=1.0):
        self.shape.draw_circle(self.pt(u, v), radius)
        self.shape.finish(color=color, fill=fill, width=width)

    def vessels(self, tubes, dome=None, dome_fill=PALE_RED):
        """Vessels drawn as outlined tubes: all outlines first, then all fills, so they merge.

        ``tubes`` is [(polyline, radius)]; ``dome`` an optional (u, v, radius) aneurysm sac."""
        for uvs, radius in tubes:
            self.path(uvs, color=ARTERY, width=2 * radius + 2.4)
        if dome:
            self.circle(dome[0], dome[1], dome[2] + 1.2, color=None, fill=ARTERY)
        for uvs, radius in tubes:
            self.path(uvs, color=PALE_RED, width=2 * radius)
        if dome:
            self.circle(dome[0], dome[1], dome[2], color=None, fill=dome_fill)

    def label(self, u, v, text, size=6.8, align="left", bold=False):
        font = self.fonts["hebo" if bold else "helv"]
        p = self.pt(u, v)
        width = font.text_length(text, fontsize=size)
        x = p.x - width / 2 if align == "center" else p.x - width if align == "right" else p.x
        self.writer.append((x, p.y), text, font=font, fontsize=size)

    def commit(self):
        self.shape.commit()


def _axes(c, xlabel, ylabel, xticks, xmax, yticks=(), ymax=1.0):
    """Axes in the figure's lower-left; returns a function mapping data (x, y) to unit coords."""
    u0, u1, v0, v1 = 0.16, 0.95, 0.08, 0.78

    def to_uv(x, y):
        return u0 + (u1 - u0) * x / xmax, v1 - (v1 - v0) * y / ymax

    c.path([(u0, v0), (u0, v1), (u1, v1)], width=0.8)
    for x in xticks:
        u, _ = to_uv(x, 0)
        c.path([(u, v1), (u, v1 + 0.025)], width=0.6)
        c.label(u, v1 + 0.11, str(x), align="center")
    for y in yticks:
        _, v = to_uv(0, y)
        c.path([(u0 - 0.012, v), (u0, v)], width=0.6)
        c.label(u0 - 0.02, v + 0.02, str(y), align="right")
    c.label((u0 + u1) / 2, 0.99, xlabel, align="center")
    c.label(u0 + 0.02, v0 + 0.02, ylabel)
    return to_uv


def willis(c):
    left = [(0.38, 0.40), (0.38, 0.60)]  # PComm, left side of the drawing
    right = [(0.62, 0.40), (0.62, 0.60)]
    for side in (left, right):
        c.path(side, color=ARTERY, width=1.6)
    c.path([(0.5, 0.96), (0.5, 0.64)], color=ARTERY, width=3.2)  # basilar
    c.path([(0.40, 1.0), (0.5, 0.96), (0.60, 1.0)], color=ARTERY, width=2.2)  # vertebrals
    c.path([(0.2, 0.76), (0.30, 0.64), (0.38, 0.60), (0.5, 0.64), (0.62, 0.60), (0.70, 0.64),
            (0.8, 0.76)], color=ARTERY, width=2.2)  # P1 and PCA
    c.path([(0.14, 0.34), (0.38, 0.40), (0.46, 0.24), (0.54, 0.24), (0.62, 0.40), (0.86, 0.34)],
           color=ARTERY, width=2.4)  # MCA, A1, AComm
    c.path([(0.46, 0.24), (0.46, 0.03)], color=ARTERY, width=2.0)
    c.path([(0.54, 0.24), (0.54, 0.03)], color=ARTERY, width=2.0)
    for u in (0.38, 0.62):
        c.circle(u, 0.40, 4.2, color=ARTERY, fill=PALE_RED, width=1.2)
    c.label(0.57, 0.10, "ACA (A2)")
    c.label(0.57, 0.23, "AComm")
    c.label(0.66, 0.44, "ICA")
    c.label(0.86, 0.30, "MCA", align="center")
    c.label(0.65, 0.53, "PComm")
    c.label(0.80, 0.83, "PCA", align="center")
    c.label(0.53, 0.78, "Basilar")
    c.label(0.61, 0.91, "Vertebrals")


def autoregulation(c):
    to_uv = _axes(c, "Mean arterial pressure (mmHg)", "CBF (mL/100 g/min)",
                  (0, 60, 100, 150, 200), 200, (0, 25, 50, 75), 90)
    pts = [(20, 14), (40, 30), (60, 50), (100, 50), (150, 50), (170, 60), (190, 76)]
    c.path([to_uv(x, y) for x, y in pts], color=ARTERY, width=1.6)
    for x in (60, 150):
        u, _ = to_uv(x, 0)
        c.path([(u, to_uv(0, 85)[1]), (u, to_uv(0, 0)[1])], color=GREY, width=0.6, dashes="[2 2] 0")
    u, v = to_uv(105, 57)
    c.label(u, v, "autoregulatory plateau", align="center")


def _bifurcation(c, dome_fill=PALE_RED):
    """Parent artery rising from below and dividing in two, the aneurysm sac at the apex."""
    tubes = [([(0.5, 0.90), (0.5, 0.62)], 7),
             ([(0.5, 0.62), (0.32, 0.58), (0.05, 0.42)], 5),
             ([(0.5, 0.62), (0.68, 0.58), (0.95, 0.42)], 5)]
    c.vessels(tubes, dome=(0.5, 0.36, 14), dome_fill=dome_fill)


def saccular(c):
    _bifurcation(c)
    c.label(0.54, 0.86, "Parent artery (M1)")
    c.label(0.57, 0.22, "Dome")
    c.label(0.38, 0.30, "Neck", align="right")
    c.path([(0.385, 0.28), (0.47, 0.50)], width=0.5)
    c.label(0.05, 0.33, "Branch")
    c.label(0.95, 0.33, "Branch", align="right")


def clip(c):
    _bifurcation(c, dome_fill=(0.86, 0.86, 0.86))
    steel, light = (0.35, 0.35, 0.40), (0.80, 0.80, 0.85)
    c.path([(0.445, 0.50), (0.56, 0.50)], color=steel, width=3.0)
    c.path([(0.445, 0.50), (0.40, 0.38), (0.33, 0.22)], color=steel, width=2.0)
    c.circle(0.445, 0.50, 3.0, color=steel, fill=light, width=1.0)
    c.label(0.32, 0.18, "Clip", align="right")
    c.label(0.57, 0.22, "Excluded dome")
    c.label(0.54, 0.86, "Parent artery")
    c.label(0.05, 0.33, "Branch")
    c.label(0.95, 0.33, "Branch", align="right")


def pterional(c):
    """Left lateral view of the skull (face to the left) with a frontotemporal bone flap."""
    cx, cy = c.rect.x0 + c.rect.width * 0.45, c.rect.y0 + c.rect.height * 0.43
    a, b = 68.0, c.rect.height * 0.41

    def sk(x, y):  # skull-relative coordinates to unit coordinates of the figure
        return (cx + x * a - c.rect.x0) / c.rect.width, (cy + y * b - c.rect.y0) / c.rect.height

    c.shape.draw_oval(pymupdf.Rect(cx - a, cy - b, cx + a, cy + b))
    c.shape.finish(color=INK, width=1.2, fill=(0.97, 0.95, 0.90))
    c.circle(*sk(-0.80, 0.42), 8, color=INK, width=0.8)  # orbit
    c.circle(*sk(0.42, 0.62), 4, color=INK, width=0.8)  # external auditory meatus
    flap = [sk(-0.66, 0.30), sk(-0.70, -0.20), sk(-0.40, -0.55), sk(0.02, -0.52), sk(0.16, -0.10),
            sk(0.10, 0.46), sk(-0.30, 0.52)]
    c.path(flap, color=ARTERY, width=1.2, dashes="[3 2] 0", closed=True)
    c.path([sk(-0.60, 0.36), sk(-0.62, -0.16), sk(-0.30, -0.40), sk(0.04, -0.22), sk(0.07, 0.40)],
           color=VEIN, width=1.0)  # dural opening, based inferiorly
    c.path([sk(-0.66, 0.40), sk(-0.12, 0.46)], color=GREY, width=2.0)  # sphenoid ridge
    for x, y in ((-0.66, 0.24), (0.02, -0.52), (0.12, 0.40)):
        c.circle(*sk(x, y), 3.2, color=INK, fill=(0.3, 0.3, 0.3), width=0.6)
    c.label(*sk(-1.05, 0.05), "Keyhole burr hole", align="right")
    c.path([sk(-1.03, 0.08), sk(-0.70, 0.22)], width=0.5)
    c.label(*sk(0.08, -0.62), "Bone flap")
    c.label(*sk(-0.27, 0.10), "Dural opening", size=6.2, align="center")
    c.label(sk(-0.25, 0)[0], 0.99, "Sphenoid ridge", align="center")
    c.path([sk(-0.25, 0.48), (sk(-0.25, 0)[0], 0.92)], width=0.5)
    c.label(sk(-0.80, 0)[0], 0.99, "Orbit", align="center")
    c.path([sk(-0.80, 0.62), (sk(-0.80, 0)[0], 0.92)], width=0.5)
    c.label(*sk(0.52, 0.60), "Ear")


def pressure_volume(c):
    to_uv = _axes(c, "Added intracranial volume", "ICP (mmHg)", (), 10, (0, 10, 22, 40), 50)
    pts = [(x / 4, 8 + 0.55 * math.exp(0.46 * x / 4)) for x in range(0, 37)]
    c.path([to_uv(x, y) for x, y in pts if y <= 50], color=ARTERY, width=1.6)
    u0, v = to_uv(0, 22)
    c.path([(u0, v), (to_uv(10, 22)[0], v)], color=GREY, width=0.7, dashes="[2 2] 0")
    c.label(to_uv(0.3, 24)[0], to_uv(0, 24)[1], "treatment threshold 22 mmHg")
    c.label(to_uv(3.2, 5)[0], to_uv(0, 5)[1], "compensation", align="center")
    c.label(to_uv(6.2, 42)[0], to_uv(0, 42)[1], "decompensation", align="right")


def vasospasm_timeline(c):
    to_uv = _axes(c, "Day after subarachnoid hemorrhage", "Relative risk", (0, 3, 7, 10, 14, 21),
                  22, (), 1.0)
    risk = [0, 0.02, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 1, 1, 0.95, 0.8, 0.6, 0.45, 0.3, 0.22,
            0.16, 0.12, 0.08, 0.06, 0.04, 0.02]
    for day, value in enumerate(risk):
        u_a, v_a = to_uv(day + 0.12, value * 0.92)
        u_b, v_b = to_uv(day + 0.88, 0)
        c.shape.draw_rect(pymupdf.Rect(c.pt(u_a, v_a), c.pt(u_b, v_b)))
        c.shape.finish(color=None, fill=PALE_RED if value < 0.9 else ARTERY)
    c.label(to_uv(14.5, 0.92)[0], to_uv(0, 0.92)[1], "peak days 7-10")


def avm(c):
    c.shape.draw_rect(pymupdf.Rect(c.pt(0.05, 0.02), c.pt(0.95, 0.12)))
    c.shape.finish(color=VEIN, fill=(0.78, 0.82, 0.95), width=1.0)
    for start in ((0.02, 0.30), (0.02, 0.62), (0.10, 0.95)):
        c.path([start, (0.25, (start[1] + 0.6) / 2), (0.40, 0.58)], color=ARTERY, width=2.0)
    rng = random.Random(7)
    for _ in range(26):
        pts = [(0.50 + rng.uniform(-0.10, 0.10), 0.58 + rng.uniform(-0.20, 0.20)) for _ in range(4)]
        c.bezier(pts, color=ARTERY if rng.random() < 0.5 else VEIN, width=0.9)
    c.path([(0.58, 0.50), (0.68, 0.35), (0.70, 0.20), (0.72, 0.12)], color=VEIN, width=4.0)
    c.label(0.03, 0.22, "Feeding arteries")
    c.label(0.50, 0.90, "Nidus", align="center")
    c.label(0.75, 0.30, "Draining vein")
    c.label(0.50, 0.09, "Superior sagittal sinus", align="center")


def _distance(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def _gray_png(width, height, value):
    """PNG bytes of a grayscale image whose pixel (x, y) is value(x, y) in 0..255."""
    samples = bytes(max(0, min(255, int(value(x, y)))) for y in range(height) for x in range(width))
    pix = pymupdf.Pixmap(pymupdf.csGRAY, width, height, samples, False)
    return pix.tobytes("png")


def _angiogram_value(vessels, rng):
    def value(x, y):
        shade = 200 + 25 * y / 150
        for (ax, ay, bx, by), radius in vessels:
            d = _distance(x, y, ax, ay, bx, by)
            if d < radius + 1.5:
                shade = min(shade, 95 + 80 * max(0.0, d - radius + 1.5) / 1.5)
        if math.hypot(x - 131, y - 72) < 13:
            shade = min(shade, 25 + rng.randint(0, 30))
        return shade + rng.randint(-3, 3)
    return value


def angiogram(c):
    rng = random.Random(11)
    vessels = [((0, 140, 60, 110), 6), ((60, 110, 118, 80), 5.5), ((118, 80, 170, 38), 4),
               ((170, 38, 240, 20), 3), ((118, 80, 175, 118), 4), ((175, 118, 240, 140), 3),
               ((170, 38, 200, 5), 2), ((175, 118, 205, 150), 2), ((60, 110, 40, 60), 2.5)]
    png = _gray_png(240, 150, _angiogram_value(vessels, rng))
    box = pymupdf.Rect(c.pt(0.12, 0.0), c.pt(0.88, 1.0))
    c.page.insert_image(box, stream=png)


def _ct_value(rng):
    def value(x, y):
        u, v = (x - 100) / 84, (y - 100) / 96
        r = u * u + v * v
        if r > 1.0:
            return 8
        if r > 0.86:
            return 236
        shift = 9 * (1 - abs(v))  # midline pushed toward the image's right (patient's left)
        ventricle_r = ((x - 118 - shift * 0.4) / 9) ** 2 + ((y - 96) / 26) ** 2
        ventricle_l = ((x - 90 - shift) / 4) ** 2 + ((y - 96) / 18) ** 2
        if ventricle_r < 1 or ventricle_l < 1:
            return 40 + rng.randint(-3, 3)
        if abs(x - 100 - shift) < 1.2 and abs(v) < 0.8:
            return 200
        edema = x < 100 + shift and ((u + 0.45) / 0.35) ** 2 + (v / 0.55) ** 2 < 1
        return (82 if edema else 122) + rng.randint(-5, 5)
    return value


def ct_edema(c):
    png = _gray_png(200, 200, _ct_value(random.Random(5)))
    side = c.rect.height
    box = pymupdf.Rect(c.rect.x0 + (c.rect.width - side) / 2, c.rect.y0,
                       c.rect.x0 + (c.rect.width + side) / 2, c.rect.y1)
    c.page.insert_image(box, stream=png)
    c.writer.append((box.x0 - 12, box.y0 + 10), "R", font=c.fonts["hebo"], fontsize=8)
    c.writer.append((box.x1 + 5, box.y0 + 10), "L", font=c.fonts["hebo"], fontsize=8)


# name -> (drawing function, height of the drawing in points)
FIGURES = {
    "willis": (willis, 108),
    "autoregulation": (autoregulation, 95),
    "saccular": (saccular, 85),
    "clip": (clip, 85),
    "angiogram": (angiogram, 108),
    "pterional": (pterional, 100),
    "pressure_volume": (pressure_volume, 95),
    "ct_edema": (ct_edema, 105),
    "vasospasm_timeline": (vasospasm_timeline, 88),
    "avm": (avm, 95),
}


def draw_figure(name, page, rect, writer, fonts):
    """Draw figure ``name`` into ``rect`` of ``page``; text labels go to ``writer``."""
    canvas = Canvas(page, rect, writer, fonts)
    FIGURES[name][0](canvas)
    canvas.commit()
