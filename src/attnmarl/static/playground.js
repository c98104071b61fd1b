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

    // A small seeded generator (mulberry32) for the starting states of the page's episodes.
    function rng32(seed) {
      let a = seed >>> 0;
      return function () {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
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

      // Agents and landmarks uniform in [-1, 1]^2, agents at rest (Scenario.reset_world).
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
        features.push([o[others + 2 * j], o[others + 2 * j + 1], o[comm + 2 * j], o[comm + 2 * j + 1]]);
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
      const n = tokens.kinds.length, dh = d / heads;
      const e = [], z = [];
      for (let t = 0; t < n; t++) {
        const kind = tokens.kinds[t], x = tokens.features[t], start = KIND_START[kind], flag = KIND_FLAG[kind];
        const en = new Float64Array(d);
        for (let r = 0; r < d; r++) {
          let s = W.embed[r * dt + flag];
          for (let c = 0; c < x.length; c++) s += W.embed[r * dt + start + c] * x[c];
          en[r] = s;
        }
        e.push(en); z.push(layerNorm(en, W.ln_attn_w, W.ln_attn_b, eps));
      }
      const q = affine(W.W_q, null, z[0], d, d);
      const alpha = new Float64Array(heads * n), c = new Float64Array(d);
      for (let h = 0; h < heads; h++) {
        const u = new Float64Array(d); // W_k,h^T q_h
        for (let a = 0; a < dh; a++) {
          const qa = q[h * dh + a], row = (h * dh + a) * d;
          for (let k = 0; k < d; k++) u[k] += W.W_kv[row + k] * qa;
        }
        let top = -Infinity;
        const score = new Float64Array(n);
        for (let t = 0; t < n; t++) {
          if (mask && !mask[t]) continue;
          let s = 0;
          for (let k = 0; k < d; k++) s += u[k] * z[t][k];
          score[t] = s / Math.sqrt(dh);
          top = Math.max(top, score[t]);
        }
        let total = 0;
        for (let t = 0; t < n; t++) {
          const w = mask && !mask[t] ? 0 : Math.exp(score[t] - top);
          alpha[h * n + t] = w; total += w;
        }
        const zbar = new Float64Array(d);
        for (let t = 0; t < n; t++) {
          const w = (alpha[h * n + t] /= total);
          if (w) for (let k = 0; k < d; k++) zbar[k] += w * z[t][k];
        }
        for (let a = 0; a < dh; a++) { // W_v,h zbar_h: rows d + h dh + a of W_kv
          const row = (d + h * dh + a) * d;
          let s = 0;
          for (let k = 0; k < d; k++) s += W.W_kv[row + k] * zbar[k];
          c[h * dh + a] = s;
        }
      }
      const hid = affine(W.W_o, W.W_o_b, c, d, d);
      for (let k = 0; k < d; k++) hid[k] += e[0][k];
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
     * hides tokens from agent i (entity actor only). Returns {actions, logits, alpha} (alpha: per agent,
     * l x n, or null). */
    function teamActions(policy, w, weights, masks) {
      const obs = Array.from({ length: w.m }, (_, i) => w.observe(i));
      if (policy === "greedy") return { actions: greedyActions(w.P, obs), logits: null, alpha: null };
      if (policy === "flat") {
        const logits = obs.map((o) => flatForward(weights.flat, o));
        return { actions: logits.map(argmax), logits, alpha: null };
      }
      const out = obs.map((o, i) => entityForward(weights.entity, spreadTokens(o, w.m), masks ? masks[i] : null));
      return { actions: out.map((r) => argmax(r.logits)), logits: out.map((r) => r.logits), alpha: out.map((r) => r.alpha) };
    }

    window.attnmarlPlayground = {
      World, spreadTokens, entityForward, flatForward, greedyActions, teamActions, assignment, argmax,
      decodeWeights, rng32,
    };
  })();
}
