/* The static face of an attnmarl explorer: draws precomputed frames as SVG, with no kernel and
 * no network. Written into the page by attnmarl.notebook.widgets.Explorer.static_html. The data element
 * (id "<ID>-data") holds gzip-compressed, base64-encoded JSON: the controls, and one frame per
 * combination of their values in itertools.product order (the last control varies fastest).
 * The drawing functions are line-for-line twins of attnmarl/notebook/svg.py (a test compares their markup). */
if (typeof window.attnmarlExplorer === "undefined") {
  (function () {
    const COLORMAPS = {
      viridis: ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"],
      RdBu_r: ["#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d", "#b2182b", "#67001f"],
    };
    const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

    function color(name, t) {
      const stops = COLORMAPS[name] || COLORMAPS.viridis;
      t = Math.min(1, Math.max(0, isFinite(t) ? t : 0)) * (stops.length - 1);
      const i = Math.min(stops.length - 2, Math.floor(t)), f = t - i;
      const a = [1, 3, 5].map((k) => parseInt(stops[i].slice(k, k + 2), 16));
      const b = [1, 3, 5].map((k) => parseInt(stops[i + 1].slice(k, k + 2), 16));
      const rgb = a.map((v, k) => Math.round(v + f * (b[k] - v)));
      return [`rgb(${rgb.join(",")})`, 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 140];
    }

    // A panel title centred on cx in a panel w pixels wide, wrapped at spaces into lines that fit.
    const TITLE_CHAR = 7;
    function title(t, cx, w) {
      const room = Math.max(8, Math.floor((2 * Math.min(cx, w - cx)) / TITLE_CHAR));
      const lines = [];
      String(t).split(" ").forEach((word) => {
        if (lines.length && lines[lines.length - 1].length + 1 + word.length <= room) lines[lines.length - 1] += " " + word;
        else lines.push(word);
      });
      const spans = lines.map((line, i) => `<tspan x="${cx}" dy="${i === 0 ? 0 : 15}">${esc(line)}</tspan>`).join("");
      return [`<text y="16" text-anchor="middle" font-weight="600" font-size="13">${spans}</text>`, lines.length];
    }

    // World x and y in [-lim, lim] to the pixels of a size x size square whose corner is (left, top).
    const square = (lim, left, top, size) => [(v) => left + ((v + lim) / (2 * lim)) * size,
      (v) => top + ((lim - v) / (2 * lim)) * size];

    // cells are 30 px squares, narrowed to fit CELLS_WIDTH: to 24 px if they carry numbers (then in 9 px
    // type), to 6 px if not, keeping at least 14 px of height for the row labels
    const CELLS_WIDTH = 600;
    // A heatmap's masked cells: attnmarl.notebook.viz's MASKED.
    const MASKED = "#f0f0f0";
    function heatmap(p) {
      const nRows = p.rows.length, nCols = p.cols.length, fits = Math.floor(CELLS_WIDTH / nCols);
      const cell = p.annotate ? Math.min(30, Math.max(24, fits)) : Math.max(6, Math.min(30, fits));
      const cellH = Math.max(cell, 14), cellFont = cell >= 30 ? 10 : 9, colFont = cell >= 11 ? 11 : 9;
      const rowLabel = 8 + 7 * Math.max(...p.rows.map((r) => String(r).length)), left = rowLabel + 22;
      const scale = left + cell * nCols + 10; // the colour scale: a bar right of the cells, vmax on top, vmin below
      const scaleLabel = 6 + 6 * Math.max(p.vmax.toFixed(2).length, p.vmin.toFixed(2).length);
      const w = scale + 10 + scaleLabel;
      const [head, nLines] = title(p.title, left + (cell * nCols) / 2, w);
      const top = 10 + 16 * nLines, h = top + cellH * nRows + 44;
      const span = p.vmax - p.vmin || 1;
      let s = `<svg class="ax-panel ax-heatmap" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${esc(p.title)}">`;
      s += head;
      p.values.forEach((row, i) => row.forEach((v, j) => {
        const x = left + j * cell, y = top + i * cellH;
        if (p.masked && p.masked[i][j]) { // no value to read: a plain cell, no number
          s += `<rect class="ax-masked" x="${x}" y="${y}" width="${cell}" height="${cellH}" ` +
            `fill="${MASKED}"><title>${esc(p.rows[i])} → ${esc(p.cols[j])}: masked</title></rect>`;
          return;
        }
        const [css, light] = color(p.cmap, (v - p.vmin) / span);
        s += `<rect x="${x}" y="${y}" width="${cell}" height="${cellH}" fill="${css}" data-value="${v}">` +
          `<title>${esc(p.rows[i])} → ${esc(p.cols[j])}: ${v}</title></rect>`;
        if (p.annotate) s += `<text class="ax-cell" x="${x + cell / 2}" y="${y + cellH / 2 + 4}" text-anchor="middle" ` +
          `font-size="${cellFont}" fill="${light ? "#000" : "#fff"}">${v.toFixed(2)}</text>`;
      }));
      p.rows.forEach((r, i) => { s += `<text x="${left - 5}" y="${top + i * cellH + cellH / 2 + 4}" text-anchor="end" font-size="11">${esc(r)}</text>`; });
      p.cols.forEach((c, j) => { s += `<text x="${left + j * cell + cell / 2}" y="${top + cellH * nRows + 15}" text-anchor="middle" font-size="${colFont}">${esc(c)}</text>`; });
      const stops = COLORMAPS[p.cmap] || COLORMAPS.viridis, band = (cellH * nRows) / stops.length;
      stops.slice().reverse().forEach((stop, k) => {
        s += `<rect class="ax-scale" x="${scale}" y="${top + k * band}" width="10" height="${band}" fill="${stop}"/>`;
      });
      s += `<text x="${scale + 13}" y="${top + 8}" font-size="10">${p.vmax.toFixed(2)}</text>` +
        `<text x="${scale + 13}" y="${top + cellH * nRows}" font-size="10">${p.vmin.toFixed(2)}</text>`;
      s += `<text x="${left + (cell * nCols) / 2}" y="${h - 6}" text-anchor="middle" font-size="12">${esc(p.xlabel)}</text>`;
      s += `<text transform="translate(11,${top + (cellH * nRows) / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(p.ylabel)}</text>`;
      return s + "</svg>";
    }

    function points(p) {
      const size = 210, left = 44, w = left + size + 16, lim = p.lim;
      const [head, nLines] = title(p.title, left + size / 2, w);
      const top = 10 + 16 * nLines, h = top + size + 40;
      const [X, Y] = square(lim, left, top, size);
      let s = `<svg class="ax-panel ax-points" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" ` +
        `aria-label="${esc(p.title)}" data-square="${[left, top, size, lim].join(",")}">`;
      s += head;
      s += `<rect x="${left}" y="${top}" width="${size}" height="${size}" fill="none" stroke="#444"/>`;
      for (let t = Math.ceil(-lim); t <= lim; t++) {
        s += `<line x1="${X(t)}" y1="${top}" x2="${X(t)}" y2="${top + size}" stroke="#ddd"/>` +
          `<line x1="${left}" y1="${Y(t)}" x2="${left + size}" y2="${Y(t)}" stroke="#ddd"/>`;
        s += `<text x="${X(t)}" y="${top + size + 14}" text-anchor="middle" font-size="10">${t}</text>` +
          `<text x="${left - 4}" y="${Y(t) + 3}" text-anchor="end" font-size="10">${t}</text>`;
      }
      p.xy.forEach(([x, y], i) => {
        s += `<circle class="ax-entity" data-entity="${i}" cx="${X(x)}" cy="${Y(y)}" r="4.5" fill="#1f77b4" ` +
          `data-x="${x}" data-y="${y}"/>`;
        if (p.highlight.includes(i)) s += `<circle cx="${X(x)}" cy="${Y(y)}" r="9" fill="none" stroke="#d62728" stroke-width="2"/>`;
        s += `<text x="${X(x) + 7}" y="${Y(y) - 6}" font-size="11">${esc(p.labels[i])}</text>`;
      });
      s += `<text x="${left + size / 2}" y="${h - 6}" text-anchor="middle" font-size="12">${esc(p.xlabel)}</text>`;
      s += `<text transform="translate(12,${top + size / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(p.ylabel)}</text>`;
      return s + "</svg>";
    }

    // Where an arena's labels go (twin of attnmarl/notebook/labels.py): each entity in turn tries its disc's upper
    // half (a large disc), below, above, right, left and the diagonals, and takes the cheapest: 1000 for each
    // label already placed that it overlaps, 10 for leaving the arena, 1 for each other disc it touches.
    const CHAR_WIDTH = 0.6, GAP = 1;
    const overlaps = (a, b) => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
    function touchesDisc(box, cx, cy, r) {
      const nx = Math.min(Math.max(cx, box[0]), box[2]), ny = Math.min(Math.max(cy, box[1]), box[3]);
      return (nx - cx) * (nx - cx) + (ny - cy) * (ny - cy) < r * r;
    }
    function labelPositions(centres, radii, labels, font, bounds) {
      const placed = [], out = [];
      centres.forEach(([cx, cy], k) => {
        const r = radii[k], w = CHAR_WIDTH * font * String(labels[k]).length + 2, h = font;
        const dx = r + GAP + w / 2, dy = r + GAP + h / 2, ex = 0.7 * r + GAP + w / 2, ey = 0.7 * r + GAP + h / 2;
        const places = r >= font - 1 ? [[cx, cy - 0.4 * r]] : [];
        places.push([cx, cy + dy], [cx, cy - dy], [cx + dx, cy], [cx - dx, cy],
          [cx + ex, cy + ey], [cx - ex, cy + ey], [cx + ex, cy - ey], [cx - ex, cy - ey]);
        let best = places[0], bestCost = -1;
        places.forEach(([x, y]) => {
          const box = [x - w / 2, y - h / 2, x + w / 2, y + h / 2];
          let cost = 1000 * placed.filter((other) => overlaps(box, other)).length;
          if (box[0] < bounds[0] || box[1] < bounds[1] || box[2] > bounds[2] || box[3] > bounds[3]) cost += 10;
          cost += centres.filter(([ox, oy], j) => j !== k && touchesDisc(box, ox, oy, radii[j])).length;
          if (bestCost < 0 || cost < bestCost) { best = [x, y]; bestCost = cost; }
        });
        placed.push([best[0] - w / 2, best[1] - h / 2, best[0] + w / 2, best[1] + h / 2]);
        out.push(best);
      });
      return out;
    }

    // Tick marks and labels at the whole world units inside [-lim, lim], under and left of an arena's square.
    function ticks(lim, left, top, size) {
      const [X, Y] = square(lim, left, top, size);
      let s = "";
      for (let t = Math.ceil(-lim); t <= lim; t++) {
        s += `<line x1="${X(t)}" y1="${top + size}" x2="${X(t)}" y2="${top + size + 4}" stroke="#444"/>` +
          `<line x1="${left - 4}" y1="${Y(t)}" x2="${left}" y2="${Y(t)}" stroke="#444"/>` +
          `<text x="${X(t)}" y="${top + size + 14}" text-anchor="middle" font-size="9">${t}</text>` +
          `<text x="${left - 6}" y="${Y(t) + 3}" text-anchor="end" font-size="9">${t}</text>`;
      }
      return s;
    }

    // An arena's grid lines and shaded square: attnmarl.notebook.viz's GRID_LINE, SHADE, SHADE_OPACITY, shade_box.
    const GRID_LINE = "#e0e0e0", SHADE = "#4c72b0", SHADE_OPACITY = 0.12;
    const shadeBox = ([x, y, half], lim) => [Math.max(x - half, -lim), Math.max(y - half, -lim),
      Math.min(x + half, lim), Math.min(y + half, lim)];

    function arena(p) {
      const size = 260, left = 40, w = left + size + 10, lim = p.lim;
      const [head, nLines] = title(p.title, left + size / 2, w);
      const top = 10 + 16 * nLines, h = top + size + 36;
      const [X, Y] = square(lim, left, top, size);
      const R = (r) => (r / (2 * lim)) * size;
      let s = `<svg class="ax-panel ax-arena" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" ` +
        `aria-label="${esc(p.title)}" data-square="${[left, top, size, lim].join(",")}">`;
      s += head;
      s += `<rect x="${left}" y="${top}" width="${size}" height="${size}" fill="#fafafa" stroke="#444"/>`;
      const cells = p.cells || 0;
      for (let k = 1; k < cells; k++) { // a grid world's cell borders
        const v = -lim + k * (2 * lim / cells);
        s += `<line x1="${X(v)}" y1="${top}" x2="${X(v)}" y2="${top + size}" stroke="${GRID_LINE}"/>` +
          `<line x1="${left}" y1="${Y(v)}" x2="${left + size}" y2="${Y(v)}" stroke="${GRID_LINE}"/>`;
      }
      if (p.shade) {
        const [x0, y0, x1, y1] = shadeBox(p.shade, lim);
        s += `<rect class="ax-shade" x="${X(x0)}" y="${Y(y1)}" width="${X(x1) - X(x0)}" height="${Y(y0) - Y(y1)}" ` +
          `fill="${SHADE}" fill-opacity="${SHADE_OPACITY}"/>`;
      }
      s += ticks(lim, left, top, size);
      p.xy.forEach(([x, y], i) => {
        const r = p.radius[i];
        s += `<circle class="ax-entity" data-entity="${i}" cx="${X(x)}" cy="${Y(y)}" r="${R(r)}" ` +
          `fill="${esc(p.colors[i])}" fill-opacity="0.85"/>`;
        if (p.emphasis[i] > 0) s += `<circle class="ax-emphasis" cx="${X(x)}" cy="${Y(y)}" r="${R(r + 0.04)}" fill="none" ` +
          `stroke="#d62728" stroke-width="3" stroke-opacity="${p.emphasis[i]}"/>`;
        if (i === p.focus) s += `<circle cx="${X(x)}" cy="${Y(y)}" r="${R(r + 0.02)}" fill="none" stroke="#000" stroke-width="2"/>`;
      });
      // labels after every disc, placed so that none overprints another; a white halo keeps one readable on a disc
      const places = labelPositions(p.xy.map(([x, y]) => [X(x), Y(y)]), p.radius.map(R), p.labels, 9,
        [left, top, left + size, top + size]);
      places.forEach(([lx, ly], i) => {
        s += `<text x="${lx}" y="${ly + 3}" text-anchor="middle" font-size="9" paint-order="stroke" ` +
          `stroke="#fff" stroke-width="2.5" stroke-opacity="0.8">${esc(p.labels[i])}</text>`;
      });
      s += `<text x="${left + size / 2}" y="${h - 6}" text-anchor="middle" font-size="12">x</text>`;
      s += `<text transform="translate(12,${top + size / 2}) rotate(-90)" text-anchor="middle" font-size="12">y</text>`;
      return s + "</svg>";
    }

    function picture(p) {
      const top = 26, scale = p.scale, w = p.width * scale, h = p.height * scale;
      let s = `<svg class="ax-panel ax-picture" width="${w + 8}" height="${top + h + 8}" viewBox="0 0 ${w + 8} ${top + h + 8}" role="img" aria-label="${esc(p.title)}">`;
      s += `<text x="${4 + w / 2}" y="16" text-anchor="middle" font-weight="600" font-size="13">${esc(p.title)}</text>`;
      s += `<image x="4" y="${top}" width="${w}" height="${h}" href="${p.png}" style="image-rendering:pixelated"/>`;
      p.boxes.forEach(([row, col, height, width]) => {
        s += `<rect x="${4 + col * scale}" y="${top + row * scale}" width="${width * scale}" ` +
          `height="${height * scale}" fill="none" stroke="#d62728" stroke-width="2"/>`;
      });
      return s + "</svg>";
    }

    function text(p) {
      return `<div class="ax-panel ax-text"><div class="ax-text-title">${esc(p.title)}</div><pre>${esc(p.text)}</pre></div>`;
    }

    const PANELS = { heatmap, points, arena, picture, text };
    const renderPanels = (frame) => frame.panels.map((p) => PANELS[p.type](p)).join("");

    async function load(id) {
      const b64 = document.getElementById(id + "-data").textContent.trim();
      const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      return JSON.parse(await new Response(stream).text());
    }

    window.attnmarlRenderPanels = renderPanels;
    window.attnmarlLoad = load; // live.js reads its data the same way
    window.attnmarlExplorer = async function (id) {
      const root = document.getElementById(id);
      const spec = await load(id);
      const choice = spec.controls.map((c) => c.default);
      const fmt = (c, v) => (c.kind === "slider" ? String(Number(v.toPrecision(6))) : String(v));
      let controls = "";
      spec.controls.forEach((c, k) => {
        const name = `<span>${esc(c.label)}</span>`;
        if (c.kind === "slider") controls += `<label>${name}<input type="range" data-k="${k}" min="0" max="${c.values.length - 1}" step="1" value="${c.default}" aria-label="${esc(c.label)}"><span class="ax-value">${esc(fmt(c, c.values[c.default]))}</span></label>`;
        else if (c.kind === "toggle") controls += `<label><input type="checkbox" data-k="${k}"${c.values[c.default] ? " checked" : ""} aria-label="${esc(c.label)}">${name}</label>`;
        else controls += `<label>${name}<select data-k="${k}" aria-label="${esc(c.label)}">${c.values.map((v, i) => `<option value="${i}"${i === c.default ? " selected" : ""}>${esc(v)}</option>`).join("")}</select></label>`;
      });
      root.innerHTML = (spec.title ? `<div class="ax-title">${esc(spec.title)}</div>` : "") +
        `<div class="ax-controls">${controls}</div><div class="ax-panels"></div><div class="ax-caption"></div>` +
        `<div class="ax-note">Precomputed explorer: these frames were computed by the package when the book was built, for the values the controls offer. Run the notebook for the live version.</div>`;
      function render() {
        let index = 0;
        spec.controls.forEach((c, k) => { index = index * c.values.length + choice[k]; });
        const frame = spec.frames[index];
        root.querySelector(".ax-panels").innerHTML = renderPanels(frame);
        root.querySelector(".ax-caption").textContent = frame.caption;
        root.dataset.frame = String(index);
      }
      root.querySelectorAll("[data-k]").forEach((input) => {
        const k = Number(input.dataset.k), c = spec.controls[k];
        input.addEventListener(c.kind === "slider" ? "input" : "change", () => {
          choice[k] = c.kind === "toggle" ? c.values.indexOf(input.checked) : Number(input.value);
          if (c.kind === "slider") input.nextElementSibling.textContent = fmt(c, c.values[choice[k]]);
          render();
        });
      });
      render();
    };
  })();
}
