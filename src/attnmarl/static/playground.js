/* The playground: trained simple_spread agents running in the page, with no kernel and no network.
 * Written into the page by attnmarl.playground.playground_html, with a data element (id "<ID>-data")
 * holding JSON: the world's constants and the shipped actors' weights (float32, base64).
 *
 * Four twins of the Python package, each held to it by a parity test in Chromium
 * (tests/test_playground.py):
 *   World           -- attnmarl.envs.spread.BatchedSpread + physics.world_step, one world, float64;
 *   spreadTokens    -- attnmarl.envs.tokens for simple_spread: self [v, p], landmark p_l - p,
 *                      agent [p_j - p, c_j];
 *   entityForward   -- attnmarl.nets.policies.EntityAttention.forward (embed, pre-LN, one query
 *                      from the self token, l heads, W_o, FF, LN, W_y), the path of outputs_and_alpha;
 *   flatForward     -- attnmarl.nets.policies.Actor, an MLP on o^i;
 *   greedyActions   -- attnmarl.envs.baselines.greedy_assignment_policy (discrete actions).
 * Then Playground, the widget that draws and drives them. */
if (typeof window.attnmarlPlayground === "undefined") {
  (function () {
    // Unit force of each discrete action (attnmarl.envs.actions.DISCRETE_DIRECTION).
    const MOVES = [[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]];

    // log(1 + e^x) as numpy's logaddexp(0, x); e^x where that is exact to double precision (physics.softplus).
    function softplus(x) {
      if (x <= -40) return Math.exp(x);
      return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
    }

    /* numpy.random.default_rng(seed).random(), exactly: numpy's SeedSequence hashes the seed into a
     * PCG64 state (128-bit, in BigInt), and each draw is (next64 >> 11) / 2^53. World.reset with it
     * draws what attnmarl's batched port draws: seed s starts where BatchedSpread(1, seed=s) starts. */
    function numpyRandom(seed) {
      const mul = (a, b) => Math.imul(a, b) >>> 0;
      const entropy = []; // the seed's 32-bit words, least significant first
      let rest = BigInt(seed);
      do { entropy.push(Number(rest & 0xffffffffn)); rest >>= 32n; } while (rest > 0n);
      let hashConst = 0x43b0d7e5;
      const hashmix = (v) => {
        v = (v ^ hashConst) >>> 0; hashConst = mul(hashConst, 0x931e8875); v = mul(v, hashConst);
        return (v ^ (v >>> 16)) >>> 0;
      };
      const mix = (x, y) => { const r = (mul(0xca01f9dd, x) - mul(0x4973f715, y)) >>> 0; return (r ^ (r >>> 16)) >>> 0; };
      const pool = [0, 1, 2, 3].map((i) => hashmix(i < entropy.length ? entropy[i] : 0));
      for (let a = 0; a < 4; a++) for (let b = 0; b < 4; b++) if (a !== b) pool[b] = mix(pool[b], hashmix(pool[a]));
      for (let a = 4; a < entropy.length; a++) for (let b = 0; b < 4; b++) pool[b] = mix(pool[b], hashmix(entropy[a]));
      let outConst = 0x8b51f9dd; // SeedSequence.generate_state(4, uint64)
      const words = [];
      for (let i = 0; i < 8; i++) {
        let v = (pool[i % 4] ^ outConst) >>> 0; outConst = mul(outConst, 0x58f38ded); v = mul(v, outConst);
        words.push(BigInt((v ^ (v >>> 16)) >>> 0));
      }
      const u64 = (k) => (words[2 * k + 1] << 32n) | words[2 * k];
      const M64 = (1n << 64n) - 1n, M128 = (1n << 128n) - 1n;
      const MULT = (2549297995355413924n << 64n) + 4865540595714422341n; // PCG's 128-bit multiplier
      const inc = ((((u64(2) << 64n) | u64(3)) << 1n) | 1n) & M128;
      let state = 0n;
      const step = () => { state = (state * MULT + inc) & M128; };
      step(); state = (state + ((u64(0) << 64n) | u64(1))) & M128; step();
      return function () { // XSL-RR output of the next state
        step();
        const x = ((state >> 64n) ^ state) & M64, rot = state >> 122n;
        return Number((((x >> rot) | (x << ((64n - rot) & 63n))) & M64) >> 11n) / 9007199254740992;
      };
    }

    /* One simple_spread world with m agents and m landmarks. P holds mpe2's constants
     * (attnmarl.envs.physics.WorldParams): dt, damping, contact_force, contact_margin, agent_size,
     * landmark_size, sensitivity, mass, local_ratio, max_cycles. Positions and velocities are
     * Float64Arrays [x0, y0, x1, y1, ...]. */
    class World {
      constructor(P, m) {
        this.P = P; this.m = m;
        this.pos = new Float64Array(2 * m); this.vel = new Float64Array(2 * m);
        this.landmarks = new Float64Array(2 * m); this.steps = 0;
      }

      // Agents and landmarks uniform in [-1, 1]^2, agents at rest (Scenario.reset_world), drawn in the
      // port's order: every agent's x and y, then every landmark's.
      reset(random) {
        for (let k = 0; k < 2 * this.m; k++) this.pos[k] = 2 * random() - 1;
        for (let k = 0; k < 2 * this.m; k++) this.landmarks[k] = 2 * random() - 1;
        this.vel.fill(0); this.steps = 0;
      }

      copy() {
        const w = new World(this.P, this.m);
        w.pos.set(this.pos); w.vel.set(this.vel); w.landmarks.set(this.landmarks); w.steps = this.steps;
        return w;
      }

      /* One step with discrete actions (m ints in 0..4): action forces, contact forces between agents,
       * integration in mpe2's order (p += v dt; v = v (1 - damping) + f / mass dt), then the rewards
       * r_i = (1 - rho) (-sum_l min_j |p_j - p_l|) + rho (-#{j != i : |p_i - p_j| < r_i + r_j}). */
      step(actions) {
        const { P, m, pos, vel } = this;
        const f = new Float64Array(2 * m);
        for (let i = 0; i < m; i++) {
          const a = MOVES[actions[i]];
          f[2 * i] = a[0] * P.sensitivity; f[2 * i + 1] = a[1] * P.sensitivity;
        }
        const k = P.contact_margin, reach = 2 * P.agent_size;
        for (let i = 0; i < m; i++) {
          let fx = 0, fy = 0;
          for (let j = 0; j < m; j++) {
            if (j === i) continue;
            const dx = pos[2 * i] - pos[2 * j], dy = pos[2 * i + 1] - pos[2 * j + 1];
            const dist = Math.sqrt(dx * dx + dy * dy);
            const scale = (P.contact_force / dist) * (softplus(-(dist - reach) / k) * k);
            fx += dx * scale; fy += dy * scale;
          }
          f[2 * i] += fx; f[2 * i + 1] += fy;
        }
        for (let c = 0; c < 2 * m; c++) {
          pos[c] += vel[c] * P.dt;
          vel[c] *= 1 - P.damping;
          vel[c] += (f[c] / P.mass) * P.dt;
        }
        this.steps += 1;
        return this.rewards();
      }

      rewards() {
        const { P, m, pos, landmarks } = this;
        let cover = 0;
        for (let l = 0; l < m; l++) {
          let best = Infinity;
          for (let j = 0; j < m; j++) {
            const dx = pos[2 * j] - landmarks[2 * l], dy = pos[2 * j + 1] - landmarks[2 * l + 1];
            best = Math.min(best, Math.sqrt(dx * dx + dy * dy));
          }
          cover -= best;
        }
        const r = new Float64Array(m), reach = 2 * P.agent_size;
        for (let i = 0; i < m; i++) {
          let touching = 0;
          for (let j = 0; j < m; j++) {
            if (j === i) continue;
            const dx = pos[2 * i] - pos[2 * j], dy = pos[2 * i + 1] - pos[2 * j + 1];
            if (Math.sqrt(dx * dx + dy * dy) < reach) touching += 1;
          }
          r[i] = cover * (1 - P.local_ratio) + -touching * P.local_ratio;
        }
        return r;
      }

      /* o^i as mpe2 builds it, rounded to float32 like the port's observations:
       * [v_i, p_i, (p_l - p_i) for each l, (p_j - p_i) for each j != i, c_j = (0, 0) for each j != i]. */
      observe(i) {
        const { m, pos, vel, landmarks } = this;
        const o = new Float64Array(6 * m), f = Math.fround;
        o[0] = f(vel[2 * i]); o[1] = f(vel[2 * i + 1]); o[2] = f(pos[2 * i]); o[3] = f(pos[2 * i + 1]);
        for (let l = 0; l < m; l++) {
          o[4 + 2 * l] = f(landmarks[2 * l] - pos[2 * i]); o[5 + 2 * l] = f(landmarks[2 * l + 1] - pos[2 * i + 1]);
        }
        let k = 4 + 2 * m;
        for (let j = 0; j < m; j++) {
          if (j === i) continue;
          o[k] = f(pos[2 * j] - pos[2 * i]); o[k + 1] = f(pos[2 * j + 1] - pos[2 * i + 1]); k += 2;
        }
        return o;
      }
    }

    /* Agent i's entity tokens from its observation (attnmarl.envs.tokens, simple_spread): token 0 is
     * itself [v, p] (kind 0), tokens 1..m the landmarks [dx, dy] (kind 1), tokens m+1..2m-1 the other
     * agents [dx, dy, c_0, c_1] (kind 2), in agent order without i. Returns {kinds, features}. */
    function spreadTokens(o, m) {
      const kinds = [0], features = [o.subarray(0, 4)];
      for (let l = 0; l < m; l++) { kinds.push(1); features.push(o.subarray(4 + 2 * l, 6 + 2 * l)); }
      const others = 4 + 2 * m, comm = others + 2 * (m - 1);
      for (let j = 0; j < m - 1; j++) {
        kinds.push(2);
        features.push(Float64Array.of(o[others + 2 * j], o[others + 2 * j + 1], o[comm + 2 * j], o[comm + 2 * j + 1]));
      }
      return { kinds, features };
    }

    // The entity actor's feature blocks in its embedding's columns: self 0-3, landmark 4-5, agent 6-9;
    // then one flag column per kind (10, 11, 12), whose weights are the kind's bias (policies._token_index).
    const KIND_START = [0, 4, 6], KIND_FLAG = [10, 11, 12];

    // y = W x + b for W (rows x cols, row-major Float32Array), x of length cols.
    function affine(W, b, x, rows, cols) {
      const y = new Float64Array(rows);
      for (let r = 0; r < rows; r++) {
        let s = b ? b[r] : 0;
        const off = r * cols;
        for (let c = 0; c < cols; c++) s += W[off + c] * x[c];
        y[r] = s;
      }
      return y;
    }

    // torch.nn.LayerNorm: (x - mean) / sqrt(var + eps) * gamma + beta, var without Bessel's correction.
    function layerNorm(x, gamma, beta, eps) {
      const d = x.length;
      let mean = 0;
      for (let k = 0; k < d; k++) mean += x[k];
      mean /= d;
      let v = 0;
      for (let k = 0; k < d; k++) v += (x[k] - mean) * (x[k] - mean);
      const inv = 1 / Math.sqrt(v / d + eps), y = new Float64Array(d);
      for (let k = 0; k < d; k++) y[k] = (x[k] - mean) * inv * gamma[k] + beta[k];
      return y;
    }

    /* EntityAttention.forward for one agent: tokens {kinds, features} (n tokens), mask (n booleans,
     * true = a real token; null = all real). Returns {logits (d_y), alpha (l x n, row-major)}.
     *   e_n = E_kind t_n + b_kind;  z_n = LN(e_n);  q = W_q z_0
     *   alpha_{h,n} = softmax_n(<q_h, W_k,h z_n> / sqrt(d/l));  c_h = W_v,h sum_n alpha_{h,n} z_n
     *   h = e_0 + W_o c;  h <- h + FF(LN(h));  y = W_y LN(h)
     * The score is computed as <W_k,h^T q_h, z_n> and the value as W_v,h applied once to the weighted
     * sum of z, as the Python forward does: the same numbers with fewer multiplications. */
    function entityForward(W, tokens, mask) {
      const { d, heads, d_tokens: dt, d_ff: dff, d_y: dy, eps } = W;
      const n = tokens.kinds.length, dh = d / heads, scale = 1 / Math.sqrt(dh);
      const z = new Float64Array(n * d), e0 = new Float64Array(d), en = new Float64Array(d);
      const gamma = W.ln_attn_w, beta = W.ln_attn_b, embed = W.embed;
      for (let t = 0; t < n; t++) { // e_n, then z_n = LN(e_n) into row t of z
        const kind = tokens.kinds[t], x = tokens.features[t], start = KIND_START[kind], flag = KIND_FLAG[kind];
        const w = x.length;
        let mean = 0;
        for (let r = 0; r < d; r++) {
          const row = r * dt;
          let v = embed[row + flag];
          for (let c = 0; c < w; c++) v += embed[row + start + c] * x[c];
          en[r] = v; mean += v;
        }
        mean /= d;
        let variance = 0;
        for (let r = 0; r < d; r++) variance += (en[r] - mean) * (en[r] - mean);
        const inv = 1 / Math.sqrt(variance / d + eps), off = t * d;
        for (let r = 0; r < d; r++) z[off + r] = (en[r] - mean) * inv * gamma[r] + beta[r];
        if (t === 0) e0.set(en);
      }
      const q = affine(W.W_q, null, z.subarray(0, d), d, d);
      const alpha = new Float64Array(heads * n), c = new Float64Array(d);
      const u = new Float64Array(d), zbar = new Float64Array(d), score = new Float64Array(n);
      for (let h = 0; h < heads; h++) {
        u.fill(0); // W_k,h^T q_h
        for (let a = 0; a < dh; a++) {
          const qa = q[h * dh + a], row = (h * dh + a) * d;
          for (let k = 0; k < d; k++) u[k] += W.W_kv[row + k] * qa;
        }
        let top = -Infinity;
        for (let t = 0; t < n; t++) {
          if (mask && !mask[t]) continue;
          let v = 0;
          const off = t * d;
          for (let k = 0; k < d; k++) v += u[k] * z[off + k];
          score[t] = v * scale;
          if (score[t] > top) top = score[t];
        }
        let total = 0;
        for (let t = 0; t < n; t++) {
          const w = mask && !mask[t] ? 0 : Math.exp(score[t] - top);
          alpha[h * n + t] = w; total += w;
        }
        zbar.fill(0);
        for (let t = 0; t < n; t++) {
          const w = (alpha[h * n + t] /= total), off = t * d;
          if (w) for (let k = 0; k < d; k++) zbar[k] += w * z[off + k];
        }
        for (let a = 0; a < dh; a++) { // W_v,h zbar_h: rows d + h dh + a of W_kv
          const row = (d + h * dh + a) * d;
          let v = 0;
          for (let k = 0; k < d; k++) v += W.W_kv[row + k] * zbar[k];
          c[h * dh + a] = v;
        }
      }
      const hid = affine(W.W_o, W.W_o_b, c, d, d);
      for (let k = 0; k < d; k++) hid[k] += e0[k];
      const inner = affine(W.ff0, W.ff0_b, layerNorm(hid, W.ln_ff_w, W.ln_ff_b, eps), dff, d);
      for (let k = 0; k < dff; k++) inner[k] = Math.max(0, inner[k]);
      const ff = affine(W.ff2, W.ff2_b, inner, d, dff);
      for (let k = 0; k < d; k++) hid[k] += ff[k];
      const logits = affine(W.W_y, W.W_y_b, layerNorm(hid, W.ln_out_w, W.ln_out_b, eps), dy, d);
      return { logits, alpha };
    }

    // Actor: y = W_out relu(W_1 relu(W_0 o + b_0) + b_1) + b_out, on agent i's own observation.
    function flatForward(W, o) {
      const h0 = affine(W.l0, W.l0_b, o, W.d_hidden, W.obs_dim);
      for (let k = 0; k < h0.length; k++) h0[k] = Math.max(0, h0[k]);
      const h1 = affine(W.l1, W.l1_b, h0, W.d_hidden, W.d_hidden);
      for (let k = 0; k < h1.length; k++) h1[k] = Math.max(0, h1[k]);
      return affine(W.out, W.out_b, h1, W.d_y, W.d_hidden);
    }

    // The first index of the largest value (torch.argmax, numpy.argmax).
    function argmax(v) {
      let best = 0;
      for (let k = 1; k < v.length; k++) if (v[k] > v[best]) best = k;
      return best;
    }

    /* The one-to-one assignment of rows to columns of a square cost matrix with the least total cost
     * (scipy.optimize.linear_sum_assignment), by the Hungarian method with potentials, O(n^3).
     * Returns the column of each row. */
    function assignment(cost) {
      const n = cost.length, INF = Infinity;
      const u = new Float64Array(n + 1), v = new Float64Array(n + 1);
      const p = new Int32Array(n + 1), way = new Int32Array(n + 1);
      for (let i = 1; i <= n; i++) {
        p[0] = i;
        let j0 = 0;
        const minv = new Float64Array(n + 1).fill(INF), used = new Uint8Array(n + 1);
        do {
          used[j0] = 1;
          const i0 = p[j0];
          let delta = INF, j1 = 0;
          for (let j = 1; j <= n; j++) {
            if (used[j]) continue;
            const cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
            if (cur < minv[j]) { minv[j] = cur; way[j] = j0; }
            if (minv[j] < delta) { delta = minv[j]; j1 = j; }
          }
          for (let j = 0; j <= n; j++) {
            if (used[j]) { u[p[j]] += delta; v[j] -= delta; } else minv[j] -= delta;
          }
          j0 = j1;
        } while (p[j0] !== 0);
        do { const j1 = way[j0]; p[j0] = p[j1]; j0 = j1; } while (j0);
      }
      const col = new Int32Array(n);
      for (let j = 1; j <= n; j++) col[p[j] - 1] = j - 1;
      return col;
    }

    /* greedy_assignment_policy: assign agents to landmarks one-to-one with the least summed distance,
     * then each agent takes the move whose rest point s(f) = p + v dt + ((1 - delta) v + f/m dt) dt / delta
     * lands closest to its landmark. obs: every agent's observation (Float64Arrays of 6m). */
    function greedyActions(P, obs) {
      const m = obs.length;
      const cost = obs.map((o) => Array.from({ length: m }, (_, l) => Math.sqrt(o[4 + 2 * l] ** 2 + o[5 + 2 * l] ** 2)));
      const col = assignment(cost);
      const shift = P.sensitivity * ((P.dt * P.dt) / (P.mass * P.damping)); // as _discrete_steer rounds it
      return obs.map((o, i) => {
        const ex = o[4 + 2 * col[i]] - (o[0] * P.dt + ((1 - P.damping) * o[0] * P.dt) / P.damping);
        const ey = o[5 + 2 * col[i]] - (o[1] * P.dt + ((1 - P.damping) * o[1] * P.dt) / P.damping);
        let best = 0, bestDist = Infinity;
        MOVES.forEach(([mx, my], a) => {
          const rx = ex - mx * shift, ry = ey - my * shift, dist = Math.sqrt(rx * rx + ry * ry);
          if (dist < bestDist) { best = a; bestDist = dist; }
        });
        return best;
      });
    }

    // Float32 weights from base64 (little-endian), cut into named tensors of the shapes given.
    function decodeWeights(spec) {
      const bytes = Uint8Array.from(atob(spec.data), (ch) => ch.charCodeAt(0));
      const all = new Float32Array(bytes.buffer);
      const W = Object.assign({}, spec.sizes);
      let at = 0;
      spec.tensors.forEach(([name, count]) => { W[name] = all.subarray(at, at + count); at += count; });
      return W;
    }

    /* Every agent's action in world w under a policy: "entity" or "flat" (the greedy, argmax action
     * of the actor, as the book evaluates it) or "greedy" (the assignment baseline). masks[i], if given,
     * hides tokens from agent i (entity actor only). Returns {actions, alpha} (alpha: per agent, l x n,
     * for the entity actor; else null). */
    function teamActions(policy, w, weights, masks) {
      const obs = Array.from({ length: w.m }, (_, i) => w.observe(i));
      if (policy === "greedy") return { actions: greedyActions(w.P, obs), alpha: null };
      if (policy === "flat") return { actions: obs.map((o) => argmax(flatForward(weights.flat, o))), alpha: null };
      const out = obs.map((o, i) => entityForward(weights.entity, spreadTokens(o, w.m), masks ? masks[i] : null));
      return { actions: out.map((r) => argmax(r.logits)), alpha: out.map((r) => r.alpha) };
    }

    // ---- the widget -------------------------------------------------------------------------------

    const POLICIES = [["entity", "entity-attention actor"], ["flat", "flat MLP actor"], ["greedy", "greedy assignment"]];
    const AGENT_COLOR = "#4646aa", LANDMARK_COLOR = "#323232"; // mpe2's colours (entity.color * 200)
    // The heads of the focused agent's attention, told apart by hue and by line: red solid, blue dashed, ...
    const HEAD_COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"], HEAD_DASHES = ["none", "7 3", "2 3", "9 3 2 3"];
    const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"];
    const SPEEDS = [["slow", 3], ["normal", 8], ["fast", 20]];
    const SIZE = 400, LIM = 1.4; // the arena: [-lim, lim]^2 in a SIZE x SIZE square, lim from LIM up
    const fmt = (v, k) => (Math.abs(v) < 0.5 * 10 ** -k ? 0 : v).toFixed(k);

    function viridis(t) { // the book's colour scale (explorer.js color): t in [0, 1]
      t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
      const i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i;
      const a = [1, 3, 5].map((k) => parseInt(VIRIDIS[i].slice(k, k + 2), 16));
      const b = [1, 3, 5].map((k) => parseInt(VIRIDIS[i + 1].slice(k, k + 2), 16));
      return `rgb(${a.map((v, k) => Math.round(v + f * (b[k] - v))).join(",")})`;
    }


    /* The playground in element `id`, with its data in `id`-data (see the header). Three teams play the
     * same episode side by side, one per policy, from the same start; the arena shows the chosen one.
     * What the reader drags is moved in every team's world, so their returns stay comparable. */
    class Playground {
      constructor(root, spec) {
        this.root = root; this.spec = spec; this.P = spec.world;
        this.weights = { entity: decodeWeights(spec.entity), flat: decodeWeights(spec.flat) };
        this.flatM = spec.flat.sizes.trained_m;
        this.policy = spec.policy; this.focus = 0; this.running = false; this.speed = 1;
        this.hidden = new Set(); // "i:token name" -- tokens hidden from agent i (entity actor only)
        this.drag = null;
        this.build();
        this.setM(spec.m, spec.seed);
      }

      available(policy) { return policy !== "flat" || this.m === this.flatM; }

      build() {
        const speeds = SPEEDS.map(([n], k) => `<option value="${k}"${k === this.speed ? " selected" : ""}>${n}</option>`).join("");
        const [lo, hi] = this.spec.m_range;
        this.root.innerHTML =
          `<div class="pg-title">Playground: trained agents on simple_spread, running in this page</div>` +
          `<div class="pg-controls">` +
          `<button data-act="play" aria-label="play or pause">play</button><button data-act="step">step</button>` +
          `<button data-act="reset">new episode</button>` +
          `<label>m <input type="range" data-act="m" min="${lo}" max="${hi}" step="1" value="${this.spec.m}" aria-label="number of agents m">` +
          `<span class="pg-m"></span></label>` +
          `<label>policy <select data-act="policy" aria-label="policy"></select></label>` +
          `<label>speed <select data-act="speed" aria-label="speed">${speeds}</select></label>` +
          `<button data-act="unhide">show all tokens</button></div>` +
          `<div class="pg-note"></div>` +
          `<div class="pg-panels"><svg class="pg-arena" viewBox="0 0 ${SIZE} ${SIZE}" role="img" ` +
          `aria-label="the arena"></svg><div class="pg-side"><div class="pg-returns"></div><div class="pg-alpha"></div></div></div>` +
          `<div class="pg-help">Drag a landmark or an agent, even while the team plays. Click an agent to see ` +
          `its attention &alpha; (arrows and the row of cells); click a cell to hide that token from it.</div>`;
        this.svg = this.root.querySelector(".pg-arena");
        const on = (act, ev, fn) => this.root.querySelector(`[data-act="${act}"]`).addEventListener(ev, fn);
        on("play", "click", () => this.setRunning(!this.running));
        on("step", "click", () => { this.setRunning(false); this.tick(); });
        on("reset", "click", () => this.reset(this.seed + 1));
        on("m", "input", (e) => this.setM(Number(e.target.value), this.seed));
        on("policy", "change", (e) => this.setPolicy(e.target.value));
        on("speed", "change", (e) => { this.speed = Number(e.target.value); });
        on("unhide", "click", () => { this.hidden.clear(); this.decide(); this.draw(); });
        this.svg.addEventListener("pointerdown", (e) => this.pointerDown(e));
        this.svg.addEventListener("pointermove", (e) => this.pointerMove(e));
        const up = () => { this.drag = null; };
        this.svg.addEventListener("pointerup", up); this.svg.addEventListener("pointercancel", up);
        const alphaBox = this.root.querySelector(".pg-alpha");
        alphaBox.addEventListener("mouseover", (e) => {
          const cell = e.target.closest("rect[data-token]");
          this.hover = cell ? this.cells.indexOf(cell) : null; this.updateAlpha();
        });
        alphaBox.addEventListener("mouseleave", () => { this.hover = null; this.updateAlpha(); });
        alphaBox.addEventListener("click", (e) => {
          const cell = e.target.closest("[data-token]");
          if (!cell || cell.dataset.token === "0") return;
          const key = `${this.focus}:${cell.dataset.name}`;
          if (this.hidden.has(key)) this.hidden.delete(key); else this.hidden.add(key);
          this.decide(); this.draw();
        });
      }

      // A new team size: new worlds, every statistic starts again.
      setM(m, seed) {
        this.m = m; this.hidden.clear(); this.focus = Math.min(this.focus, m - 1);
        this.finished = Object.fromEntries(POLICIES.map(([p]) => [p, []]));
        this.root.querySelector(".pg-m").textContent = String(m);
        this.root.querySelector('[data-act="m"]').value = String(m);
        if (!this.available(this.policy)) this.policy = "entity";
        this.root.querySelector('[data-act="policy"]').innerHTML = POLICIES.map(([p, label]) =>
          `<option value="${p}"${p === this.policy ? " selected" : ""}${this.available(p) ? "" : " disabled"}>` +
          `${label}${this.available(p) ? "" : ` (m = ${this.flatM} only)`}</option>`).join("");
        this.root.querySelector(".pg-note").textContent = m === this.flatM ? "" :
          `The flat actor reads an agent's observation as one vector of 6m numbers, and its first layer has exactly ` +
          `${6 * this.flatM} inputs: it can only play at m = ${this.flatM}, the m it was trained for. ` +
          `The entity actor reads a set of tokens, any number of them: the same weights play at every m.`;
        this.reset(seed);
      }

      setPolicy(policy) {
        if (!this.available(policy)) throw new Error(`the flat actor plays only at m = ${this.flatM}`);
        this.policy = policy; this.root.querySelector('[data-act="policy"]').value = policy; this.draw();
      }

      // A new episode from the seed's start, the same for every team.
      reset(seed) {
        this.seed = seed; this.lim = null;
        const start = new World(this.P, this.m);
        start.reset(numpyRandom(seed));
        this.worlds = {}; this.returns = {};
        POLICIES.forEach(([p]) => {
          if (this.available(p)) { this.worlds[p] = start.copy(); this.returns[p] = 0; }
        });
        this.decide(); this.draw();
      }

      masks() {
        if (!this.hidden.size) return null;
        return Array.from({ length: this.m }, (_, i) => this.tokenNames(i).map((name) => !this.hidden.has(`${i}:${name}`)));
      }

      // Agent i's tokens by what they are: itself, the landmarks, the other agents (in agent order).
      tokenNames(i) {
        const names = ["self"];
        for (let l = 0; l < this.m; l++) names.push(`L${l + 1}`);
        for (let j = 0; j < this.m; j++) if (j !== i) names.push(`a${j + 1}`);
        return names;
      }

      // Every team's next actions (and the entity actor's alpha) from its world's current state.
      decide() {
        const masks = this.masks();
        this.next = {};
        Object.entries(this.worlds).forEach(([p, w]) => { this.next[p] = teamActions(p, w, this.weights, masks); });
      }

      // One step of every team: physics, rewards, then the next decisions and the drawing.
      tick() {
        const end = this.P.max_cycles;
        Object.entries(this.worlds).forEach(([p, w]) => {
          const r = w.step(this.next[p].actions);
          this.returns[p] += r.reduce((a, b) => a + b, 0) / this.m;
          this.hold(w);
        });
        if (this.worlds.entity.steps >= end) {
          Object.keys(this.worlds).forEach((p) => this.finished[p].push(this.returns[p]));
          this.reset(this.seed + 1);
          return;
        }
        this.decide(); this.draw();
      }

      setRunning(on) {
        this.running = on;
        this.root.querySelector('[data-act="play"]').textContent = on ? "pause" : "play";
        if (on && !this.frame) {
          let last = performance.now();
          const loop = (now) => {
            if (!this.running) { this.frame = null; return; }
            if (now - last >= 1000 / SPEEDS[this.speed][1]) { last = now; this.tick(); }
            this.frame = requestAnimationFrame(loop);
          };
          this.frame = requestAnimationFrame(loop);
        }
      }

      // ---- dragging: the pointer's world position moves the grabbed entity in every world
      world(e) { // the arena scales with the page (at most SIZE pixels wide): read the pointer in its drawn size
        const box = this.svg.getBoundingClientRect();
        const lim = this.lim;
        return [((e.clientX - box.left) / box.width) * 2 * lim - lim, lim - ((e.clientY - box.top) / box.height) * 2 * lim];
      }

      pointerDown(e) {
        const [x, y] = this.world(e), w = this.worlds[this.policy];
        let best = null, bestDist = Infinity;
        for (let l = 0; l < this.m; l++) { // landmarks first: they are small and often under an agent
          const d = Math.hypot(w.landmarks[2 * l] - x, w.landmarks[2 * l + 1] - y);
          if (d < this.P.landmark_size + 0.05 && d < bestDist) { best = ["landmark", l]; bestDist = d; }
        }
        if (!best) {
          for (let i = 0; i < this.m; i++) {
            const d = Math.hypot(w.pos[2 * i] - x, w.pos[2 * i + 1] - y);
            if (d < this.P.agent_size && d < bestDist) { best = ["agent", i]; bestDist = d; }
          }
        }
        if (!best) return;
        const [kind, index] = best, at = kind === "agent" ? w.pos : w.landmarks;
        if (kind === "agent") this.focus = index; // a click selects an agent; only a move drags it
        this.drag = { kind, index, ox: at[2 * index] - x, oy: at[2 * index + 1] - y, x: null, y: null };
        this.svg.setPointerCapture(e.pointerId);
        this.draw();
      }

      pointerMove(e) {
        if (!this.drag) return;
        const [x, y] = this.world(e), { ox, oy } = this.drag;
        const edge = this.lim - 0.25; // inside the view, so that dragging never rescales it
        this.moveTo(Math.max(-edge, Math.min(edge, x + ox)), Math.max(-edge, Math.min(edge, y + oy)));
      }

      // Put the dragged entity at (x, y) in every world (an agent held there is at rest), then redecide.
      moveTo(x, y) {
        Object.assign(this.drag, { x, y });
        Object.values(this.worlds).forEach((w) => this.hold(w));
        this.decide(); this.draw();
      }

      hold(w) {
        if (!this.drag || this.drag.x === null) return;
        const { kind, index, x, y } = this.drag;
        if (kind === "landmark") { w.landmarks[2 * index] = x; w.landmarks[2 * index + 1] = y; return; }
        let nudge = 0; // two agents on exactly one point would push each other with 0/0 (mpe2 too): avoid it
        for (let j = 0; j < this.m; j++) if (j !== index && w.pos[2 * j] === x && w.pos[2 * j + 1] === y) nudge = 1e-9;
        w.pos[2 * index] = x + nudge; w.pos[2 * index + 1] = y; w.vel[2 * index] = 0; w.vel[2 * index + 1] = 0;
      }

      // ---- drawing. The markup is rebuilt only when what is drawn changes (m, the policy shown, the
      // focused agent, the hidden tokens); each step then only moves and recolours its elements.
      draw() {
        this.fitView();
        const key = [this.m, this.policy, this.focus, [...this.hidden].sort().join(), this.lim].join("|");
        if (key !== this.drawn) { this.buildArena(); this.buildReturns(); this.buildAlpha(); this.drawn = key; }
        this.updateArena(); this.updateReturns(); this.updateAlpha();
        const r = this.root.dataset, t = String(this.worlds.entity.steps);
        if (r.m !== String(this.m)) r.m = String(this.m);
        if (r.policy !== this.policy) r.policy = this.policy;
        if (r.focus !== String(this.focus)) r.focus = String(this.focus);
        if (r.t !== t) r.t = t;
      }

      /* The view [-lim, lim]^2 holds every entity the arena has shown in this episode (agents can be
       * pushed far out, past 2): lim starts at LIM and grows by steps of 0.2, never shrinking within an
       * episode, so the picture keeps its scale while the team plays. */
      fitView() {
        const w = this.worlds[this.policy];
        let reach = 0;
        for (let k = 0; k < 2 * this.m; k++) reach = Math.max(reach, Math.abs(w.pos[k]), Math.abs(w.landmarks[k]));
        const lim = Math.max(this.lim || LIM, Math.ceil((reach + this.P.agent_size + 0.05) * 5) / 5);
        if (lim !== this.lim) {
          this.lim = lim;
          this.X = (x) => ((x + lim) / (2 * lim)) * SIZE; this.Y = (y) => ((lim - y) / (2 * lim)) * SIZE;
          this.R = (r) => (r / (2 * lim)) * SIZE;
        }
      }

      buildArena() {
        const { X, Y, R } = this;
        const m = this.m, P = this.P, text = (cls) => `<text class="${cls}" text-anchor="middle" font-size="10" ` +
          `paint-order="stroke" stroke="#fff" stroke-width="2.5" stroke-opacity="0.8"></text>`;
        let s = `<rect x="0" y="0" width="${SIZE}" height="${SIZE}" fill="#fafafa" stroke="#444"/>`;
        s += `<rect x="${X(-1)}" y="${Y(1)}" width="${X(1) - X(-1)}" height="${Y(-1) - Y(1)}" fill="none" stroke="#ddd" stroke-dasharray="4 4"/>`;
        s += `<text x="6" y="${SIZE - 6}" font-size="10" fill="#888">x, y from &minus;${this.lim.toFixed(1)} to ` +
          `${this.lim.toFixed(1)}; dashed: &plusmn;1</text>`;
        const faded = (name) => this.policy === "entity" && this.hidden.has(`${this.focus}:${name}`); // hidden from the focus
        for (let i = 0; i < m; i++) {
          s += `<circle class="pg-agent" data-i="${i}" r="${R(P.agent_size)}" fill="${AGENT_COLOR}" ` +
            `fill-opacity="${faded(`a${i + 1}`) ? 0.3 : 0.85}"/>`;
          if (i === this.focus) s += `<circle class="pg-ring" r="${R(P.agent_size + 0.02)}" fill="none" stroke="#000" stroke-width="2"/>`;
          s += text("pg-agent-label");
        }
        for (let l = 0; l < m; l++) {
          s += `<circle class="pg-landmark" data-l="${l}" r="${R(P.landmark_size)}" fill="${LANDMARK_COLOR}" ` +
            `fill-opacity="${faded(`L${l + 1}`) ? 0.25 : 0.85}"/>` + text("pg-landmark-label");
        }
        if (this.policy === "entity") { // the focused agent's alpha: one line per head and token
          const heads = this.weights.entity.heads;
          for (let h = 0; h < heads; h++) {
            for (let t = 1; t < 2 * m; t++) {
              s += `<line class="pg-arrow" data-head="${h}" data-token="${t}" stroke="${HEAD_COLORS[h % HEAD_COLORS.length]}" ` +
                `stroke-dasharray="${HEAD_DASHES[h % HEAD_DASHES.length]}" stroke-linecap="round"/>`;
            }
          }
        }
        this.svg.innerHTML = s;
        const all = (cls) => Array.from(this.svg.querySelectorAll(cls));
        this.els = { agents: all(".pg-agent"), ring: this.svg.querySelector(".pg-ring"), agentLabels: all(".pg-agent-label"),
          landmarks: all(".pg-landmark"), landmarkLabels: all(".pg-landmark-label"), arrows: all(".pg-arrow") };
        this.els.agentLabels.forEach((e, i) => { e.textContent = `a${i + 1}`; });
        this.els.landmarkLabels.forEach((e, l) => { e.textContent = `L${l + 1}`; });
      }

      updateArena() {
        const { X, Y, R } = this;
        const w = this.worlds[this.policy], P = this.P, E = this.els, set = (e, name, v) => e.setAttribute(name, v);
        for (let i = 0; i < this.m; i++) {
          const cx = X(w.pos[2 * i]), cy = Y(w.pos[2 * i + 1]);
          set(E.agents[i], "cx", cx); set(E.agents[i], "cy", cy);
          set(E.agentLabels[i], "x", cx); set(E.agentLabels[i], "y", cy - 0.4 * R(P.agent_size) + 3);
          if (i === this.focus) { set(E.ring, "cx", cx); set(E.ring, "cy", cy); }
        }
        for (let l = 0; l < this.m; l++) {
          const cx = X(w.landmarks[2 * l]), cy = Y(w.landmarks[2 * l + 1]);
          set(E.landmarks[l], "cx", cx); set(E.landmarks[l], "cy", cy);
          set(E.landmarkLabels[l], "x", cx); set(E.landmarkLabels[l], "y", cy + R(P.landmark_size) + 9);
        }
        this.placeLabels();
        if (!E.arrows.length) return;
        const i = this.focus, alpha = this.next.entity.alpha[i], n = 2 * this.m, names = this.tokenNames(i);
        const x0 = X(w.pos[2 * i]), y0 = Y(w.pos[2 * i + 1]), heads = alpha.length / n;
        E.arrows.forEach((line, k) => {
          const h = Math.floor(k / (n - 1)), t = 1 + (k % (n - 1)), a = alpha[h * n + t];
          if (a < 0.02) { set(line, "visibility", "hidden"); return; }
          const name = names[t], index = Number(name.slice(1)) - 1;
          const [tx, ty] = name[0] === "L" ? [X(w.landmarks[2 * index]), Y(w.landmarks[2 * index + 1])]
            : [X(w.pos[2 * index]), Y(w.pos[2 * index + 1])];
          const off = (h - (heads - 1) / 2) * 3, len = Math.hypot(tx - x0, ty - y0) || 1; // heads side by side
          const ox = (-(ty - y0) / len) * off, oy = ((tx - x0) / len) * off;
          set(line, "visibility", "visible");
          set(line, "x1", x0 + ox); set(line, "y1", y0 + oy); set(line, "x2", tx + ox); set(line, "y2", ty + oy);
          set(line, "stroke-width", 1 + 6 * a); set(line, "stroke-opacity", Math.min(1, 0.2 + a));
        });
      }

      /* Labels never overprint: the focused agent's first, then the other agents', then the landmarks'; a label
       * whose box (10 px type, 6 px a character, with its white halo) would touch one already shown is hidden
       * until the entities move apart. */
      placeLabels() {
        const E = this.els, shown = [], order = [this.focus, ...E.agentLabels.keys()].filter((v, k, a) => a.indexOf(v) === k);
        const labels = [...order.map((i) => E.agentLabels[i]), ...E.landmarkLabels];
        labels.forEach((label) => {
          const x = Number(label.getAttribute("x")), y = Number(label.getAttribute("y")), w = 6 * label.textContent.length + 4;
          const box = [x - w / 2, y - 10, x + w / 2, y + 3];
          const free = shown.every((b) => box[2] < b[0] || b[2] < box[0] || box[3] < b[1] || b[3] < box[1]);
          if (free) shown.push(box);
          if (label.getAttribute("visibility") !== (free ? "visible" : "hidden")) label.setAttribute("visibility", free ? "visible" : "hidden");
        });
      }

      buildReturns() {
        let s = `<table><caption>Return of each team on the same episodes (mean over agents, ${this.P.max_cycles} steps, ` +
          `m = ${this.m})</caption><tr><th>policy</th><th class="pg-now">this episode</th><th>mean of finished episodes</th></tr>`;
        POLICIES.forEach(([p, label]) => {
          const cells = this.available(p) ? `<td data-return="0"></td><td class="pg-mean"></td>`
            : `<td colspan="2">plays only at m = ${this.flatM}</td>`;
          s += `<tr data-policy="${p}"${p === this.policy ? ' class="pg-shown"' : ""}><td>${label}</td>${cells}</tr>`;
        });
        this.root.querySelector(".pg-returns").innerHTML = s + "</table>";
      }

      updateReturns() {
        const box = this.root.querySelector(".pg-returns");
        box.querySelector(".pg-now").textContent = `this episode, t = ${this.worlds.entity.steps}`;
        Object.keys(this.worlds).forEach((p) => {
          const row = box.querySelector(`tr[data-policy="${p}"]`), now = row.querySelector("td[data-return]");
          const done = this.finished[p], mean = done.reduce((a, b) => a + b, 0) / done.length;
          now.dataset.return = String(this.returns[p]); now.textContent = fmt(this.returns[p], 2);
          row.querySelector(".pg-mean").textContent = done.length ? `${fmt(mean, 2)} (${done.length})` : "\u2013";
        });
      }

      // The focused agent's alpha: one row per head, one cell per token (hidden tokens crossed out).
      buildAlpha() {
        const i = this.focus, names = this.tokenNames(i), n = names.length, heads = this.weights.entity.heads;
        const cell = Math.min(30, Math.floor(620 / n)), left = 52, top = 22;
        const width = Math.max(left + cell * n + 10, 560), height = top + heads * cell + 40; // room for the legend
        let s = `<svg class="pg-heatmap" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" ` +
          `aria-label="alpha of agent ${i + 1}">`; // on a phone it narrows with the page (playground.css)
        s += `<text x="${left}" y="14" font-size="12" font-weight="600">&alpha; of the entity actor's agent a${i + 1} ` +
          `over its ${n} tokens${this.policy === "entity" ? "" : " (in the entity team's world)"}</text>`;
        for (let h = 0; h < heads; h++) {
          s += `<text x="${left - 6}" y="${top + h * cell + cell / 2 + 4}" text-anchor="end" font-size="11" ` +
            `fill="${HEAD_COLORS[h % HEAD_COLORS.length]}">head ${h + 1}</text>`;
          for (let t = 0; t < n; t++) {
            s += `<rect data-token="${t}" data-name="${names[t]}" data-head="${h}" x="${left + t * cell}" y="${top + h * cell}" ` +
              `width="${cell}" height="${cell}" style="cursor:${t ? "pointer" : "default"}"/>`;
          }
        }
        names.forEach((name, t) => {
          const x = left + t * cell + cell / 2, hidden = this.hidden.has(`${i}:${name}`);
          s += `<text x="${x}" y="${top + heads * cell + 14}" text-anchor="middle" font-size="${cell < 24 ? 9 : 11}"` +
            `${hidden ? ' text-decoration="line-through" fill="#999"' : ""}>${name}</text>`;
          if (hidden) s += `<line x1="${x - cell / 2 + 2}" y1="${top + 2}" x2="${x + cell / 2 - 2}" y2="${top + heads * cell - 2}" stroke="#fff" stroke-width="2"/>`;
        });
        s += `<text class="pg-scale" x="${left}" y="${height - 6}" font-size="11"></text>`;
        const box = this.root.querySelector(".pg-alpha");
        box.innerHTML = s + "</svg>";
        this.cells = Array.from(box.querySelectorAll("rect[data-token]")); this.hover = null;
        this.scale = box.querySelector(".pg-scale");
      }

      updateAlpha() {
        const alpha = this.next.entity.alpha[this.focus];
        const vmax = Math.max(...alpha); // the colour scale runs from 0 to the row's largest alpha
        this.cells.forEach((rect, k) => { // cells in head-major order, as alpha
          rect.setAttribute("fill", viridis(alpha[k] / vmax)); rect.dataset.value = String(alpha[k]);
        });
        const hover = this.hover == null ? null : this.cells[this.hover];
        this.scale.textContent = hover ? `${hover.dataset.name}, head ${Number(hover.dataset.head) + 1}: ` +
          `\u03b1 = ${alpha[this.hover].toFixed(3)}` : `token (key) \u2014 colour: \u03b1 from 0 (dark) to ` +
          `${vmax.toFixed(2)} (yellow); hover a cell for its value`;
      }
    }

    function mount(id) {
      const root = document.getElementById(id);
      const spec = JSON.parse(document.getElementById(id + "-data").textContent);
      const pg = new Playground(root, spec);
      root.playground = pg;
      if ("IntersectionObserver" in window) { // play while on screen, pause when scrolled away
        new IntersectionObserver((entries) => entries.forEach((entry) => {
          if (!pg.touched) pg.setRunning(entry.isIntersecting);
        })).observe(root);
      }
      root.addEventListener("pointerdown", () => { pg.touched = true; }, true);
      return pg;
    }

    window.attnmarlPlayground = {
      World, spreadTokens, entityForward, flatForward, greedyActions, teamActions, assignment, argmax,
      decodeWeights, numpyRandom, Playground, mount,
    };
  })();
}
