/* The in-page face of an attnmarl explorer whose model is small enough to run in the browser (DESIGN §4,
 * "in-page models"): the page computes each frame itself, for any setting of its controls, from the
 * weights and inputs that attnmarl.notebook.widgets.Explorer.static_html exported from the package, and draws it with
 * explorer.js's renderer (the same SVG as the precomputed face). The data element (id "<ID>-data") holds
 * gzip-compressed, base64-encoded JSON: the title, the controls, the model's name and its data.
 *
 * Each model is a twin of a Python frame function (named beside it) and returns the same frame data as
 * attnmarl.notebook.viz.frame_spec of that function's Frame; tests/test_live_explorers.py holds every number to
 * PyTorch's within 1e-5 in Chromium. Needs explorer.js (attnmarlRenderPanels, attnmarlLoad) and drag.js (attnmarlDrag)
 * loaded first. The reader moves a model's figure directly (HANDLES): every change goes through the same
 * settings as the controls, which follow it. */
if (typeof window.attnmarlLive === "undefined") {
  (function () {
    const SUP = { 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };
    const sup = (n) => String(n).split("").map((d) => SUP[d]).join("");
    const ordinal = (n) => n + ((n % 100 >= 10 && n % 100 <= 20) ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th"));
    const matT = (x, W) => x.map((row) => W.map((w) => w.reduce((s, wk, k) => s + wk * row[k], 0))); // x W^T

    // One head of self-attention (attnmarl.attention.self_attention): scores q k^T (over sqrt(d_q) when
    // scaled), alpha = softmax over keys, c = alpha v.
    function attend(x, Wq, Wk, Wv, scale) {
      const q = matT(x, Wq), k = matT(x, Wk), v = matT(x, Wv), s = scale ? Math.sqrt(Wq.length) : 1;
      const alpha = q.map((qi) => {
        const scores = k.map((kj) => qi.reduce((t, a, d) => t + a * kj[d], 0) / s);
        const top = Math.max(...scores), e = scores.map((z) => Math.exp(z - top)), sum = e.reduce((a, b) => a + b, 0);
        return e.map((z) => z / sum);
      });
      const c = alpha.map((row) => v[0].map((_, d) => row.reduce((t, a, j) => t + a * v[j][d], 0)));
      return { alpha, c };
    }
    const linear = (x, W, b) => W.map((w, o) => w.reduce((t, wk, k) => t + wk * x[k], b[o])); // W x + b
    const relu = (x) => x.map((v) => Math.max(0, v));
    const signed = (v) => (v >= 0 ? "+" : "-") + Math.abs(v).toFixed(2); // Python's f"{v:+.2f}"

    // simple_spread's observation of every agent (attnmarl.envs.spread.BatchedSpread.observe): its velocity,
    // its position, the landmarks relative to it, the other agents relative to it, their silent channels.
    function spreadObservations(vel, pos, landmarks, obsDim) {
      return pos.map((p, i) => {
        const o = new Array(obsDim).fill(0);
        o.splice(0, 4, vel[i][0], vel[i][1], p[0], p[1]);
        landmarks.forEach((l, k) => { o[4 + 2 * k] = l[0] - p[0]; o[5 + 2 * k] = l[1] - p[1]; });
        let k = 4 + 2 * landmarks.length;
        pos.forEach((q, j) => { if (j !== i) { o[k] = q[0] - p[0]; o[k + 1] = q[1] - p[1]; k += 2; } });
        return o;
      });
    }

    // The self-attention critic of fig. 17.8 (attnmarl.nets.AttentionCritic.values_and_alpha): x^i = phi(o^i),
    // attention blocks (l heads, scaled, then a shared FC layer on [h^i; c^i]), m unshared heads g^i; values in
    // return units (ValueNorm.denormalize). Returns v_hat (m) and the first block's alpha (l, m, m).
    function attentionCritic(o, d) {
      let h = o.map((x) => d.phi.reduce((y, layer) => relu(linear(y, layer.W, layer.b)), x));
      let first = null;
      d.blocks.forEach((block) => {
        const heads = block.W_q.map((Wq, l) => attend(h, Wq, block.W_k[l], block.W_v[l], true));
        if (first === null) first = heads.map((head) => head.alpha);
        h = h.map((x, i) => relu(linear(x.concat(...heads.map((head) => head.c[i])), block.fc_W, block.fc_b)));
      });
      const v = h.map((x, i) => { // a value critic's output is normalised (ValueNorm); a Q critic's is not
        const y = linear(relu(linear(x, d.heads.W1[i], d.heads.b1[i])), d.heads.W2[i], d.heads.b2[i])[0];
        return d.value_std ? y * d.value_std[i] + d.value_mean[i] : y;
      });
      return { v, alpha: first };
    }

    // attnmarl.notebook.explorers.value._strongest: the largest weight of a row and who gets it, ties within 0.005.
    function strongest(row, names) {
      const top = Math.max(...row), winners = names.filter((_, k) => row[k] > top - 0.005);
      if (winners.length === 1) return `(${top.toFixed(2)}) to ${winners[0]}`;
      return `(${top.toFixed(2)} each) to ${winners.slice(0, -1).join(", ")} and ${winners[winners.length - 1]}`;
    }

    const entropy = (alpha) => alpha.reduce((t, row) => t - row.reduce((h, a) => h + (a > 0 ? a * Math.log(Math.max(a, 1e-12)) : 0), 0), 0) / alpha.length;

    const softmax = (y) => { const top = Math.max(...y), e = y.map((v) => Math.exp(v - top)), t = e.reduce((a, b) => a + b, 0); return e.map((v) => v / t); };
    const argmax = (row) => row.indexOf(Math.max(...row));

    // attnmarl.notebook.explorers.qnet.change_scale: the largest |change| rounded up to 1, 2 or 5 times a power of ten.
    function changeScale(change) {
      const largest = Math.max(...change.flat().map(Math.abs), 0.01), power = 10 ** Math.floor(Math.log10(largest));
      return [1, 2, 5, 10].map((k) => k * power).find((v) => v >= largest * (1 - 1e-9));
    }
    const forceToAction = ([fx, fy]) => [0, Math.max(-fx, 0), Math.max(fx, 0), Math.max(-fy, 0), Math.max(fy, 0)];
    const FORCE_TAKEN = "as taken"; // attnmarl.notebook.explorers.qnet.J_FORCE[0]
    const oneDecimal = (v) => (v >= 0 ? "+" : "-") + Math.abs(v).toFixed(1); // Python's f"{v:+.1f}"

    const NOTHING_MOVED = "nothing"; // attnmarl.notebook.explorers.policy.NOTHING_MOVED
    // attnmarl.notebook.explorers.policy.moved_note: what an episode explorer's caption adds while an entity is moved.
    const movedNote = (set, d) => (set.moved === NOTHING_MOVED ? "" :
      `; ${d.arena.labels[d.choices.indexOf(set.moved)]} put at (${signed(set.x)}, ${signed(set.y)}) at step ${set.at}`);

    /* An episode explorer's simple_spread episode, played by the page (playground.js's World and actors) from the
     * recorded start (d.pos, d.landmarks, every agent at rest) to the recorded length d.steps, each step's actions
     * from decide(world) (playground.js's teamActions); unless set.moved is NOTHING_MOVED, that entity is put at
     * (set.x, set.y) at step set.at, an agent there at rest (attnmarl.notebook.explorers.policy.continue_episode).
     * Returns {positions (per step, every entity: agents, then landmarks, as mpe2's world.entities), decisions (per
     * step), lim (the arena's half-width, every entity of the episode in view: mpe.arena_panel's), world}. The
     * recorded episode and the last other one are kept: stepping through an episode plays it once. */
    function episodeRun(set, d, decide) {
      const moved = set.moved === undefined || set.moved === NOTHING_MOVED ? -1 : d.choices.indexOf(set.moved);
      const key = moved < 0 ? "recorded" : [moved, set.x, set.y, set.at].join();
      d.runs = d.runs || {};
      if (d.runs[key]) return d.runs[key];
      const world = new window.attnmarlPlayground.World(d.world, d.pos.length);
      world.pos.set(d.pos.flat()); world.landmarks.set(d.landmarks.flat());
      const positions = [], decisions = [];
      for (let t = 0; t <= d.steps; t++) {
        if (t === set.at && moved >= 0) world.place(d.arena.labels[moved], set.x, set.y);
        positions.push(world.entities().map((e) => [e.x, e.y]));
        decisions.push(decide(world));
        if (t < d.steps) world.step(decisions[t].actions);
      }
      const reach = Math.max(...positions.flatMap((xy) => xy.map(([x, y], k) => Math.max(Math.abs(x), Math.abs(y)) + d.arena.radius[k])));
      const run = { positions, decisions, lim: Math.max(1, Math.ceil(10 * reach + 0.5) / 10), world };
      d.runs = { recorded: d.runs.recorded, [key]: run };
      return run;
    }

    // Agent i's alpha (l x n over its tokens, world.tokenNames's order) spread over the episode's entities: one row
    // per head (attnmarl.notebook.explorers.policy.policy_alpha).
    function entityAlpha(alpha, world, i, labels) {
      const tokens = world.tokenNames(i), n = tokens.length;
      return Array.from({ length: alpha.length / n }, (_, h) => {
        const row = new Array(labels.length).fill(0);
        tokens.forEach((name, k) => { row[name === "self" ? i : labels.indexOf(name)] = alpha[h * n + k]; });
        return row;
      });
    }

    const MODELS = {
      // attnmarl.notebook.explorers.policy.policy_episode_frame of the episode the page plays (episodeRun) with the
      // playground's entity actor: step t, agent i's alpha (rings: the head chosen, or their mean), every agent's pi.
      policyEpisode(set, d) {
        const P = window.attnmarlPlayground;
        if (!d.weights) d.weights = { entity: P.decodeWeights(d.entity) };
        const run = episodeRun(set, d, (world) => P.teamActions("entity", world, d.weights, null));
        const t = set.t, i = d.agents.indexOf(set.agent_index), labels = d.arena.labels, names = labels.slice(0, d.agents.length);
        const step = run.decisions[t], heads = entityAlpha(step.alpha[i], run.world, i, labels);
        const mean = labels.map((_, e) => heads.reduce((s, row) => s + row[e], 0) / heads.length);
        const row = !set.head || set.head === "mean" ? mean : heads[Number(set.head) - 1], top = Math.max(...row);
        const pi = step.logits.map((y) => softmax(Array.from(y)));
        return {
          panels: [
            { ...d.arena, xy: run.positions[t], emphasis: row.map((a) => (top > 0 ? a / top : 0)), focus: i, lim: run.lim,
              title: `t = ${t}: rings = α of ${names[i]}'s policy` },
            { type: "heatmap", values: [...heads, mean], rows: [...heads.map((_, h) => `head ${h + 1}`), "mean"], cols: labels,
              title: `α of ${names[i]}'s policy`, xlabel: "key: entity", ylabel: "head", vmin: 0, vmax: 1, cmap: "viridis",
              annotate: true },
            { type: "heatmap", values: pi, rows: names, cols: d.moves, title: "πⁱ(a) of every agent", xlabel: "move",
              ylabel: "agent i", vmin: 0, vmax: 1, cmap: "viridis", annotate: true },
          ],
          caption: `step ${t} of ${d.steps}: ${names[i]} attends most to ${labels[argmax(row)]} (α = ${top.toFixed(2)}; ` +
            `uniform would be ${(1 / labels.length).toFixed(2)}) and moves ${d.moves[argmax(pi[i])]} ` +
            `(π = ${Math.max(...pi[i]).toFixed(2)})${movedNote(set, d)}`,
        };
      },
      // attnmarl.notebook.explorers.comm.listening_frame of the episode the page plays (episodeRun) with the playground's
      // communicating actor: receiver i's sight disc, its alpha over the senders (rings) and the whole matrix.
      listening(set, d) {
        const P = window.attnmarlPlayground;
        if (!d.weights) d.weights = { comm: { [d.messages]: P.decodeWeights(d.comm) } };
        const run = episodeRun(set, d, (world) => P.teamActions(d.messages, world, d.weights, null));
        const t = set.t, i = d.agents.indexOf(set.receiver), r = set.round_ ? Number(set.round_) - 1 : 0;
        const m = d.agents.length, labels = d.arena.labels, names = labels.slice(0, m), step = run.decisions[t];
        const alpha = step.messages[r].map((row) => Array.from(row)), row = alpha[i], top = Math.max(...row);
        const seen = step.seen[i].slice(1), count = (flags) => flags.filter((f) => f).length;
        const loudest = row.reduce((best, a, j) => (j !== i && (best < 0 || a > row[best]) ? j : best), -1);
        const xy = run.positions[t];
        return {
          panels: [
            { ...d.arena, xy: [xy[i], ...xy], radius: [d.rho, ...d.arena.radius], colors: [d.sight_disc, ...d.arena.colors],
              labels: ["", ...labels], emphasis: [0, ...labels.map((_, k) => (k < m ? row[k] / top : 0))], focus: i + 1,
              lim: run.lim, title: `t = ${t}: rings = α of ${names[i]} over senders` },
            { type: "heatmap", values: alpha, rows: names, cols: names, title: `α, round ${r + 1}: receiver i (row) over senders j`,
              xlabel: "sender j", ylabel: "receiver i", vmin: 0, vmax: 1, cmap: "viridis", annotate: true },
          ],
          caption: `step ${t} of ${d.steps}: ${names[i]} sees ${count(seen.slice(0, m))} of ${m} landmarks and ` +
            `${count(seen.slice(m))} of ${m - 1} agents within ρ = ${d.rho}; of the others it listens most to ` +
            `${names[loudest]} (α = ${row[loudest].toFixed(2)}; uniform would be ${(1 / m).toFixed(2)}) and keeps ` +
            `${row[i].toFixed(2)} for itself${movedNote(set, d)}`,
        };
      },
      // attnmarl.notebook.explorers.qnet.q_episode_frame: chapter 9's Q critic at step t of a recorded episode, q^i over
      // a grid of agent j's forces, the others' actions as taken; unless set.force is FORCE_TAKEN, j pushes with (set.fx, set.fy).
      qEpisode(set, d) {
        const t = set.t, i = d.choices.indexOf(set.i), j = d.choices.indexOf(set.j), o = d.obs[t], a = d.actions[t];
        const m = o.length, names = d.arenas[t].labels.slice(0, m);
        const q = (actions) => attentionCritic(o.map((x, k) => x.concat(actions[k])), d);
        const pushed = set.force !== FORCE_TAKEN;
        const taken = q(a), now = pushed ? q(a.map((ak, k) => (k === j ? forceToAction([set.fx, set.fy]) : ak))) : taken;
        const weights = now.alpha[0][i].map((_, k) => now.alpha.reduce((s, head) => s + head[i][k], 0) / now.alpha.length);
        const response = d.grid.slice().reverse().map((fy) => d.grid.map((fx) =>
          q(a.map((ak, k) => (k === j ? forceToAction([fx, fy]) : ak))).v[i]));
        const change = response.map((row) => row.map((v) => v - taken.v[i])), reach = changeScale(change);
        const labels = d.grid.map(oneDecimal), flat = response.flat(), took = `(${signed(a[j][2] - a[j][1])}, ${signed(a[j][4] - a[j][3])})`;
        const action = pushed ? `${names[j]}'s force set to F = (${signed(set.fx)}, ${signed(set.fy)}) (it pushed with ${took})`
          : `${names[j]} pushed with F = ${took}`;
        return {
          panels: [
            { ...d.arenas[t], focus: i, emphasis: d.arenas[t].xy.map((_, k) => (k < m ? weights[k] : 0)),
              title: `t = ${t}: rings = α of q̂ of ${names[i]}` },
            { type: "heatmap", values: [...now.alpha.map((head) => head[i]), weights],
              rows: [...now.alpha.map((_, h) => `head ${h + 1}`), "mean"], cols: names, title: `α of q̂ of ${names[i]}`,
              xlabel: "key: agent j", ylabel: "head", vmin: 0, vmax: 1, cmap: "viridis", annotate: true },
            { type: "heatmap", values: change, rows: labels.slice().reverse(), cols: labels,
              title: `q̂ of ${names[i]} − as taken, ${names[j]}'s force varied`, xlabel: `${names[j]}'s force F_x`,
              ylabel: "F_y", vmin: -reach, vmax: reach, cmap: "RdBu_r", annotate: d.grid.length <= 7 },
            { type: "text", text: names.map((n, k) => `${k === i ? "*" : " "} q̂ of ${n}: ${now.v[k].toFixed(2).padStart(7)}`).join("\n"),
              title: pushed ? `q̂ with ${names[j]}'s force set` : "q̂ with the actions taken" },
          ],
          caption: `step ${t}: ${action}; over ` +
            `the grid of its forces q̂ of ${names[i]} spans ${(Math.max(...flat) - Math.min(...flat)).toFixed(2)}; ` +
            `α of ${names[i]} on ${names[j]}: ${weights[j].toFixed(2)} (uniform ${(1 / m).toFixed(2)})`,
        };
      },
      // attnmarl.notebook.explorers.policy.policy_probe_frame: chapter 8's entity actor (playground.js's entityForward,
      // itself held to PyTorch) in a frozen state, one agent or landmark moved.
      policyProbe(set, d) {
        const P = window.attnmarlPlayground;
        if (!d.weights) d.weights = P.decodeWeights(d.entity);
        const m = d.pos.length, moved = d.choices.indexOf(set.moved), query = d.choices.indexOf(set.query);
        const labels = d.arena.labels, agents = labels.slice(0, m);
        const act = (pos, landmarks) => spreadObservations(d.vel, pos, landmarks, d.obs_dim)
          .map((o) => P.entityForward(d.weights, P.spreadTokens(Float64Array.from(o), m), null));
        const pos = d.pos.map((p, i) => (i === moved ? [set.x, set.y] : p));
        const landmarks = d.landmarks.map((p, k) => (k + m === moved ? [set.x, set.y] : p));
        const out = act(pos, landmarks), before = act(d.pos, d.landmarks);
        const alpha = out.map((r, i) => { // mean of heads, token by token onto world.entities
          const tokens = d.token_entities[i], n = tokens.length, heads = r.alpha.length / n;
          const row = new Array(d.arena.xy.length).fill(0);
          tokens.forEach((e, t) => { let total = 0; for (let h = 0; h < heads; h++) total += r.alpha[h * n + t]; row[e] = total / heads; });
          return row;
        });
        const probs = out.map((r) => softmax(Array.from(r.logits)));
        const top = Math.max(...alpha[query]);
        const changed = before.map((r, i) => [argmax(Array.from(r.logits)), argmax(probs[i])])
          .map(([a, b], i) => (a === b ? null : `${agents[i]}: ${d.moves[a]} → ${d.moves[b]}`)).filter((c) => c);
        const [tx, ty] = d.true_xy[moved];
        return {
          panels: [
            { ...d.arena, xy: d.arena.xy.map((p, k) => (k === moved ? [set.x, set.y] : p)), focus: query,
              emphasis: alpha[query].map((a) => (top > 0 ? a / top : 0)),
              lim: Math.max(d.arena.lim, 1.2, 1.1 * Math.max(Math.abs(set.x), Math.abs(set.y))),
              title: `${labels[moved]} moved; rings = α of ${labels[query]}` },
            { type: "heatmap", values: alpha.map((row) => d.keys.map((k) => row[k])), rows: agents, cols: d.key_labels,
              title: "α, mean of heads", xlabel: "key: entity", ylabel: "agent i (query)", vmin: 0, vmax: 1,
              cmap: "viridis", annotate: true },
            { type: "heatmap", values: probs, rows: agents, cols: d.moves, title: "πⁱ(a)", xlabel: "move",
              ylabel: "agent i", vmin: 0, vmax: 1, cmap: "viridis", annotate: true },
          ],
          caption: `${labels[moved]} at (${signed(set.x)}, ${signed(set.y)}); it really stood at (${signed(tx)}, ` +
            `${signed(ty)}). Most likely moves that changed: ${changed.join(", ") || "none"}`,
        };
      },
      // attnmarl.notebook.explorers.value.probe_frame: chapter 7's trained critic in a frozen state, one agent moved.
      probe(set, d) {
        const moved = d.choices.indexOf(set.moved), query = d.choices.indexOf(set.query), names = d.names;
        const truth = attentionCritic(spreadObservations(d.vel, d.pos, d.landmarks, d.obs_dim), d);
        const pos = d.pos.map((p, i) => (i === moved ? [set.x, set.y] : p));
        const { v, alpha } = attentionCritic(spreadObservations(d.vel, pos, d.landmarks, d.obs_dim), d);
        const rows = alpha.map((head) => head[query]);
        const weights = rows[0].map((_, j) => rows.reduce((t, row) => t + row[j], 0) / rows.length);
        const xy = d.arena.xy.map((p, k) => (k === moved ? [set.x, set.y] : p));
        const arena = { ...d.arena, xy, focus: query, lim: Math.max(d.arena.lim, 1.2, 1.1 * Math.max(Math.abs(set.x), Math.abs(set.y))),
          emphasis: d.arena.xy.map((_, k) => (k < weights.length ? weights[k] : 0)),
          title: `${names[moved]} moved; rings = α of ${names[query]}'s value` };
        const lines = names.map((n, k) => `${k === query ? "*" : " "} v̂ of ${n}: ${v[k].toFixed(2).padStart(7)} ` +
          `(${signed(v[k] - truth.v[k])})`);
        const [tx, ty] = d.true_xy[moved];
        return {
          panels: [
            arena,
            { type: "heatmap", values: [...rows, weights], rows: [...rows.map((_, h) => `head ${h + 1}`), "mean"], cols: names,
              title: `α of ${names[query]}'s value`, xlabel: "key: agent j", ylabel: "head", vmin: 0, vmax: 1,
              cmap: "viridis", annotate: true },
            { type: "text", text: lines.join("\n"), title: "values (change from true state)" },
          ],
          caption: `${names[moved]} at (${signed(set.x)}, ${signed(set.y)}); it really stood at (${signed(tx)}, ` +
            `${signed(ty)}). ${names[query]}'s value: ${v[query].toFixed(2)} (true state ${truth.v[query].toFixed(2)}); ` +
            `the most weight, mean of heads, goes ${strongest(weights, names)}`,
        };
      },
      // attnmarl.notebook.explorers.self_attention.alpha_frame: one head on m points of the plane, x^1 movable.
      alpha(set, data) {
        const layer = data.layers[`${set.seed},${set.d_q}`], m = set.m;
        const x = data.inputs[set.seed].slice(0, m).map((p) => p.slice());
        x[0] = [set.x1_0, set.x1_1];
        const { alpha, c } = attend(x, layer.W_q, layer.W_k, layer.W_v, set.scale);
        const names = Array.from({ length: m }, (_, i) => sup(i + 1));
        const largest = Math.max(...alpha.flat());
        return {
          panels: [
            { type: "points", xy: x, labels: names.map((n) => `x${n}`), title: "inputs xⁱ (x¹ ringed)", highlight: [0],
              lim: 3.0, xlabel: "1st coordinate", ylabel: "2nd coordinate" },
            { type: "heatmap", values: alpha, rows: names.map((n) => `q${n}`), cols: names.map((n) => `k${n}`),
              title: `α${set.scale ? " (scaled by 1/√d_q)" : ""}`, xlabel: "key kʲ", ylabel: "query qⁱ", vmin: 0, vmax: 1,
              cmap: "viridis", annotate: true },
            { type: "heatmap", values: c, rows: names.map((n) => `c${n}`), cols: [ordinal(1), ordinal(2)],
              title: "outputs cⁱ", xlabel: "coordinate", ylabel: "output", vmin: -2, vmax: 2, cmap: "RdBu_r", annotate: true },
          ],
          caption: `mean row entropy of α: ${entropy(alpha).toFixed(2)} nats (uniform: ln m = ${Math.log(m).toFixed(2)}); ` +
            `largest weight: ${largest.toFixed(3)}`,
        };
      },
      // attnmarl.notebook.explorers.self_attention.heads_frame: l heads side by side, d_in = 4, d_out = 2, the first two
      // coordinates of x^1 movable.
      heads(set, data) {
        const layer = data.layers[`${set.seed},${set.heads},${set.d_q}`], m = set.m;
        const x = data.inputs[set.seed].slice(0, m).map((p) => p.slice());
        x[0][0] = set.x1_0; x[0][1] = set.x1_1;
        const names = Array.from({ length: m }, (_, i) => sup(i + 1));
        const inputs = { type: "points", xy: x.map((p) => p.slice(0, 2)), labels: names.map((n) => `x${n}`),
          title: "inputs xⁱ, 1st and 2nd of 4 coordinates", highlight: [0], lim: 3.0, xlabel: "1st coordinate",
          ylabel: "2nd coordinate" };
        const heads = layer.W_q.map((Wq, h) => ({
          type: "heatmap", values: attend(x, Wq, layer.W_k[h], layer.W_v[h], set.scale).alpha,
          rows: names.map((n) => `q${n}`), cols: names.map((n) => `k${n}`), title: `head ${h + 1}`,
          xlabel: "key kʲ", ylabel: "query qⁱ", vmin: 0, vmax: 1, cmap: "viridis", annotate: true,
        }));
        const params = set.heads * (2 * set.d_q * 4 + 2 * 4);
        return {
          panels: [inputs, ...heads],
          caption: `l = ${set.heads} head(s), d_out = 2: each cⁱ concatenates l × d_out = ${set.heads} × 2 = ` +
            `${2 * set.heads} numbers; parameters: ${params}`,
        };
      },
    };

    /* An episode explorer's entities (its arena's entities from `first` on: the listening arena draws the sight disc
     * first): a drag puts one at the step shown; Enter on an agent chooses it for the control enter.agent. */
    function episodeHandles(set, d, first, enter) {
      const m = d.agents.length;
      return d.choices.map((c, k) => ({ panel: 0, entity: first + k, label: `${k < m ? "agent" : "landmark"} ${d.arena.labels[k]}`,
        pick: { moved: c, at: set.t }, x: "x", y: "y", enter: k < m ? { [enter.agent]: d.agents[k] } : null,
        enterLabel: enter.label }));
    }

    /* What the reader can move in each model's figure, for the settings `set`: entity handles (an entity
     * `entity` of panel `panel`, named `label`; moving it applies the settings `pick` and sends its position to
     * the range controls `x` and `y`; Enter or Space applies `enter`, described by `enterLabel`) and grids (the
     * cells of heatmap panel `panel` are the forces `values` along x and y: a click sets the range controls `x`
     * and `y` and the control `on` to `set`; Enter or Space switches `on` between `set` and `off`). */
    const HANDLES = {
      alpha: () => [{ panel: 0, entity: 0, label: "input x¹", x: "x1_0", y: "x1_1" }],
      heads: () => [{ panel: 0, entity: 0, label: "input x¹", x: "x1_0", y: "x1_1" }],
      probe: (set, d) => d.choices.map((c, k) => ({ panel: 0, entity: k, label: `agent ${d.names[k]}`, pick: { moved: c },
        x: "x", y: "y", enter: { query: c }, enterLabel: "rings for its value" })),
      policyProbe: (set, d) => d.choices.map((c, k) => {
        const agent = k < d.pos.length;
        return { panel: 0, entity: k, label: `${agent ? "agent" : "landmark"} ${d.arena.labels[k]}`, pick: { moved: c },
          x: "x", y: "y", enter: agent ? { query: c } : null, enterLabel: "rings for this agent" };
      }),
      policyEpisode: (set, d) => episodeHandles(set, d, 0, { agent: "agent_index", label: "its α and π" }),
      listening: (set, d) => episodeHandles(set, d, 1, { agent: "receiver", label: "whom it hears" }),
      qEpisode: (set, d) => [{ panel: 2, grid: d.grid, x: "fx", y: "fy", on: "force", set: "set to F_x, F_y", off: FORCE_TAKEN,
        label: `${set.j}'s force: the arrow keys choose one, Enter sets it or goes back to the action taken` }],
    };

    const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
    const D = () => window.attnmarlDrag;

    // A range control's value for v: within its bounds, on its steps (what its own slider would give).
    function onSteps(c, v) {
      const k = Math.round((Math.min(c.max, Math.max(c.min, v)) - c.min) / c.step);
      return Number((c.min + k * c.step).toFixed(10));
    }

    // The markup of one control (values shown beside sliders; every input named for assistive technology).
    function controlHtml(c, k) {
      const name = `<span>${esc(c.label)}</span>`, aria = `data-k="${k}" aria-label="${esc(c.label)}"`;
      if (c.kind === "range") return `<label>${name}<input type="range" ${aria} min="${c.min}" max="${c.max}" step="${c.step}" value="${c.default}"><span class="ax-value">${c.default.toFixed(2)}</span></label>`;
      if (c.kind === "slider") return `<label>${name}<input type="range" ${aria} min="0" max="${c.values.length - 1}" step="1" value="${c.default}"><span class="ax-value">${esc(c.values[c.default])}</span></label>`;
      if (c.kind === "select") return `<label>${name}<select ${aria}>${c.values.map((v, i) => `<option value="${i}"${i === c.default ? " selected" : ""}>${esc(v)}</option>`).join("")}</select></label>`;
      return `<label><input type="checkbox" ${aria}${c.default ? " checked" : ""}>${name}</label>`;
    }

    /* One explorer in the page: its controls, its figure (computed by MODELS[spec.model] for every change), and the
     * figure's own handles (HANDLES): drag an entity, or Tab to it and move it with the arrow keys; click a grid.
     * Every change, whatever made it, goes through change(), which sets the controls' inputs and redraws. */
    class LiveExplorer {
      constructor(root, spec) {
        this.root = root; this.spec = spec; this.model = MODELS[spec.model];
        this.handlesOf = HANDLES[spec.model] || (() => []);
        this.settings = {};
        spec.controls.forEach((c) => { this.settings[c.name] = c.kind === "slider" || c.kind === "select" ? c.values[c.default] : c.default; });
        root.innerHTML = (spec.title ? `<div class="ax-title">${esc(spec.title)}</div>` : "") +
          `<div class="ax-controls">${spec.controls.map(controlHtml).join("")}</div><div class="ax-panels"></div>` +
          `<div class="ax-caption"></div><div class="ax-note">Live in this page: ${esc(spec.note)}</div>`;
        this.box = root.querySelector(".ax-panels"); this.caption = root.querySelector(".ax-caption");
        this.inputs = {};
        root.querySelectorAll("[data-k]").forEach((input) => {
          const c = spec.controls[Number(input.dataset.k)];
          this.inputs[c.name] = input;
          input.addEventListener(c.kind === "toggle" || c.kind === "select" ? "change" : "input", () => this.change({ [c.name]: this.read(c, input) }));
        });
        D().attach(this.box, { handles: ".ax-handle", grab: (target, at) => this.grab(target, at), move: (at) => this.moveTo(this.held, at) });
        this.box.addEventListener("keydown", (e) => this.key(e));
        this.box.addEventListener("click", (e) => this.clickGrid(e));
        this.reserveHeight();
        this.render();
        let resized = null; // the panels wrap anew at another width: measure again once the resizing stops
        window.addEventListener("resize", () => {
          clearTimeout(resized);
          resized = setTimeout(() => { this.reserveHeight(); this.render(); }, 200);
        });
      }

      read(c, input) {
        if (c.kind === "toggle") return input.checked;
        if (c.kind === "range") return Number(input.value);
        return c.values[Number(input.value)];
      }

      // Control `name` to `value`, its input and its shown value too (a range's value kept on its steps).
      setValue(name, value) {
        const c = this.spec.controls.find((control) => control.name === name), input = this.inputs[name];
        if (c.kind === "range") value = onSteps(c, value);
        if (c.kind === "toggle") input.checked = value;
        else input.value = String(c.kind === "range" ? value : c.values.indexOf(value));
        if (c.kind === "range" || c.kind === "slider") input.nextElementSibling.textContent = c.kind === "range" ? value.toFixed(2) : String(value);
        this.settings[name] = value;
      }

      change(values) {
        Object.entries(values).forEach(([name, value]) => this.setValue(name, value));
        this.render();
      }

      render() {
        const focused = this.box.contains(document.activeElement) ? document.activeElement.dataset.key : null;
        this.frame = this.model(this.settings, this.spec.data);
        this.box.innerHTML = window.attnmarlRenderPanels(this.frame);
        this.caption.textContent = this.frame.caption;
        [this.box, this.caption].forEach((el) => {
          if (el.offsetHeight > parseFloat(el.style.minHeight || 0)) el.style.minHeight = `${el.offsetHeight}px`;
        });
        this.handles = this.handlesOf(this.settings, this.spec.data);
        this.handles.forEach((h, k) => (h.grid ? this.markGrid(h, k) : this.markEntity(h, k)));
        D().refocus(this.box, focused && `[data-key="${focused}"]`);
      }

      // An entity the reader can move: focusable, named, touch-action: none (explorer.css).
      markEntity(h, k) {
        const svg = this.box.children[h.panel], el = svg.querySelector(`.ax-entity[data-entity="${h.entity}"]`);
        const [x, y] = this.frame.panels[h.panel].xy[h.entity];
        svg.setAttribute("role", "group");
        el.classList.add("ax-handle");
        Object.entries({ tabindex: "0", role: "button", "data-key": String(k),
          "aria-label": `${h.label} at (${x.toFixed(2)}, ${y.toFixed(2)}): drag it, or move it with the arrow keys` +
            `${h.enter ? `; Enter: ${h.enterLabel}` : ""}` }).forEach(([name, v]) => el.setAttribute(name, v));
      }

      // A grid of forces: one tab stop; the chosen cell outlined while it is set.
      markGrid(h, k) {
        const svg = this.box.children[h.panel];
        svg.classList.add("ax-handle-grid");
        Object.entries({ tabindex: "0", role: "group", "data-key": String(k), "aria-label": h.label }).forEach(([name, v]) => svg.setAttribute(name, v));
        if (this.settings[h.on] !== h.set) return;
        const n = h.grid.length, [ix, iy] = this.gridIndex(h), cell = svg.querySelectorAll("rect[data-value]")[(n - 1 - iy) * n + ix];
        cell.classList.add("ax-chosen");
      }

      gridIndex(h) {
        const nearest = (v) => h.grid.reduce((best, g, i) => (Math.abs(g - v) < Math.abs(h.grid[best] - v) ? i : best), 0);
        return [nearest(this.settings[h.x]), nearest(this.settings[h.y])];
      }

      // The handle a pointer grabs (the entity it is on, else the nearest within 12 px), its world position; or null.
      grab(target, at) {
        const svg = target.closest("svg"), [, , size, lim] = svg.dataset.square.split(",").map(Number), on = target.closest(".ax-handle");
        let best = on ? this.handles[Number(on.dataset.key)] : null, reach = (12 * 2 * lim) / size;
        if (!best) {
          this.handles.forEach((h) => {
            if (h.grid || this.box.children[h.panel] !== svg) return;
            const [x, y] = this.frame.panels[h.panel].xy[h.entity], d = Math.hypot(x - at[0], y - at[1]);
            if (d < reach) { best = h; reach = d; }
          });
        }
        this.held = best;
        if (!best) return null;
        svg.querySelector(`[data-key="${this.handles.indexOf(best)}"]`).focus({ preventScroll: true });
        return this.frame.panels[best.panel].xy[best.entity];
      }

      moveTo(h, [x, y]) {
        this.change({ ...(h.pick || {}), [h.x]: x, [h.y]: y });
      }

      key(e) {
        const h = this.handles[Number(e.target.dataset.key)];
        if (!h || !e.target.dataset.key) return;
        if (h.grid) { this.keyGrid(e, h); return; }
        const step = 5 * this.spec.controls.find((c) => c.name === h.x).step, d = D().arrow(e, step);
        if (d) {
          const [x, y] = this.frame.panels[h.panel].xy[h.entity];
          this.moveTo(h, [x + d[0], y + d[1]]);
        } else if (D().activates(e) && h.enter) this.change(h.enter);
        else return;
        e.preventDefault();
      }

      keyGrid(e, h) {
        const d = D().arrow(e, 1), n = h.grid.length;
        if (d) {
          const [ix, iy] = this.gridIndex(h), clamp = (i) => Math.max(0, Math.min(n - 1, i));
          this.change({ [h.on]: h.set, [h.x]: h.grid[clamp(ix + Math.sign(d[0]))], [h.y]: h.grid[clamp(iy + Math.sign(d[1]))] });
        } else if (D().activates(e)) this.change({ [h.on]: this.settings[h.on] === h.set ? h.off : h.set });
        else return;
        e.preventDefault();
      }

      // A click on a cell of a grid of forces sets that force.
      clickGrid(e) {
        const cell = e.target.closest("rect[data-value]"), svg = cell && cell.closest(".ax-handle-grid");
        if (!svg) return;
        const h = this.handles[Number(svg.dataset.key)], n = h.grid.length;
        const k = Array.from(svg.querySelectorAll("rect[data-value]")).indexOf(cell);
        this.change({ [h.on]: h.set, [h.x]: h.grid[k % n], [h.y]: h.grid[n - 1 - Math.floor(k / n)] });
        svg.focus({ preventScroll: true });
      }

      /* The panels and the caption keep one height whatever the controls say (no jump of the page under the
       * reader): the tallest of the figures now, at each control's extremes, and at every list's first or every
       * list's last values together (the most heads and the most inputs), drawn once; render() raises it if a
       * setting draws taller still. */
      reserveHeight() {
        const lists = this.spec.controls.filter((c) => c.kind === "slider" || c.kind === "select");
        const ends = (k) => Object.fromEntries(lists.map((c) => [c.name, c.values[k(c)]]));
        const first = () => 0, last = (c) => c.values.length - 1;
        const tries = [{}, ends(first), ends(last)];
        lists.forEach((c) => tries.push({ [c.name]: c.values[0] }, { [c.name]: c.values[last(c)] }));
        this.spec.controls.forEach((c) => { if (c.kind === "toggle") tries.push({ [c.name]: !this.settings[c.name] }); });
        this.box.style.minHeight = this.caption.style.minHeight = "";
        let panels = 0, caption = 0;
        tries.forEach((t) => {
          const frame = this.model({ ...this.settings, ...t }, this.spec.data);
          this.box.innerHTML = window.attnmarlRenderPanels(frame);
          this.caption.textContent = frame.caption;
          panels = Math.max(panels, this.box.offsetHeight); caption = Math.max(caption, this.caption.offsetHeight);
        });
        this.box.style.minHeight = `${panels}px`; this.caption.style.minHeight = `${caption}px`;
      }
    }

    window.attnmarlLiveModels = MODELS;
    window.attnmarlLive = async function (id) {
      const root = document.getElementById(id);
      root.explorer = new LiveExplorer(root, await window.attnmarlLoad(id));
      return root.explorer;
    };
  })();
}
