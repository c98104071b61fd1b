/* The playground: trained agents running in the page, with no kernel and no network.
 * Written into the page by attnmarl.notebook.playground.playground_html, with a data element (id "<ID>-data")
 * holding JSON: for each task it offers, the world's constants and the shipped actors' weights
 * (float32, their byte planes gzipped, base64).
 *
 * Twins of the Python package, each held to it by a parity test in Chromium
 * (tests/test_playground.py, tests/test_playground_treasure.py, tests/test_playground_messages.py,
 * tests/test_playground_decoys.py, tests/test_playground_mat.py):
 *   numpyRandom     -- numpy.random.default_rng(seed): random(), uniform(), integers(), shuffle();
 *   World           -- attnmarl.envs.spread.BatchedSpread + physics.world_step, one world, float64;
 *   DecoyWorld      -- attnmarl.envs.decoys_port.BatchedDecoySpread: World with decoys and shuffled slots;
 *   TreasureWorld   -- attnmarl.envs.treasure.BatchedCollectTreasure (pickups, respawns, deliveries);
 *   spreadTokens, treasureTokens -- attnmarl.envs.tokens: an observation cut into entity tokens;
 *   entityForward   -- attnmarl.nets.policies.EntityAttention.forward (embed, pre-LN, one query
 *                      from the self token, l heads, W_o, FF, LN, W_y), the path of outputs_and_alpha;
 *   sightTokens     -- attnmarl.envs.sight.apply_sight and SightedEntityActor's key mask (radius rho);
 *   commForward     -- attnmarl.nets.messages.CommActor: each agent's encoding, rounds of messages, its head;
 *   matForward      -- attnmarl.nets.mat.MultiAgentTransformer.decode with argmax: tokens, encoder, the actions
 *                      decoded agent by agent;
 *   flatForward     -- attnmarl.nets.policies.Actor, an MLP on o^i;
 *   greedyActions   -- attnmarl.envs.baselines.greedy_assignment_policy (discrete actions).
 * Then Playground, the widget that draws and drives them. The worlds offer the widget the same face:
 * reset, copy, step, observe, tokensOf, netOf, tokenNames, columns, entities, position, place. */
if (typeof window.attnmarlPlayground === "undefined") {
  (function () {
    // Unit force of each discrete action (attnmarl.envs.actions.DISCRETE_DIRECTION).
    const MOVES = [[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]];

    // log(1 + e^x) as numpy's logaddexp(0, x); e^x where that is exact to double precision (physics.softplus).
    function softplus(x) {
      if (x <= -40) return Math.exp(x);
      return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
    }

    const M64 = (1n << 64n) - 1n, M128 = (1n << 128n) - 1n;
    const PCG_MULT = (2549297995355413924n << 64n) + 4865540595714422341n; // PCG's 128-bit multiplier

    /* numpy.random.default_rng(seed), exactly: numpy's SeedSequence hashes the seed into a PCG64 state
     * (128-bit, in BigInt). World.reset with it draws what attnmarl's batched ports draw: seed s starts
     * where the port's first episode for seed s starts. */
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
      const inc = ((((u64(2) << 64n) | u64(3)) << 1n) | 1n) & M128;
      let state = inc; // PCG's seeding: one step from 0, add the initial state, one more step
      state = (state + ((u64(0) << 64n) | u64(1))) & M128;
      state = (state * PCG_MULT + inc) & M128;
      return pcg64(state, inc, null);
    }

    /* A PCG64 generator in this state, as numpy's Generator draws from it. random(): a double in [0, 1),
     * (next64 >> 11) / 2^53. random.uniform(low, high): low + (high - low) random(). random.integers(high):
     * Generator.integers(0, high), by numpy's Lemire draw on 32-bit words; numpy keeps the unused upper half
     * of a 64-bit draw for the next 32-bit one (spare), across calls of the other kinds too.
     * random.clone(): an independent copy, the same stream from here; random.state(): where it stands, as
     * numpy's bit_generator.state holds it (state and inc as decimal strings; spare, or null).
     * random.shuffle(a): a permuted in place as Generator.shuffle (and so permutation and permuted along an axis)
     * permutes a 1-d array: Fisher-Yates from the last entry, each swap partner drawn by numpy's random_interval
     * (32-bit draws masked to the bits of the bound, until one is within it). */
    function pcg64(state, inc, spare) {
      const next64 = () => { // XSL-RR output of the next state
        state = (state * PCG_MULT + inc) & M128;
        const x = ((state >> 64n) ^ state) & M64, rot = state >> 122n;
        return ((x >> rot) | (x << ((64n - rot) & 63n))) & M64;
      };
      const random = () => Number(next64() >> 11n) / 9007199254740992;
      const uint32 = () => {
        if (spare !== null) { const v = spare; spare = null; return v; }
        const x = next64();
        spare = Number(x >> 32n);
        return Number(x & 0xffffffffn);
      };
      random.uniform = (low, high) => low + (high - low) * random();
      random.integers = (high) => { // numpy's buffered_bounded_lemire_uint32 with rng = high - 1
        if (!(Number.isInteger(high) && high >= 1 && high < 2 ** 32 - 1)) throw new Error(`integers: bad high ${high}`);
        if (high === 1) return 0; // numpy draws nothing for a range of one value
        const excl = BigInt(high);
        let m = BigInt(uint32()) * excl, leftover = Number(m & 0xffffffffn);
        if (leftover < high) {
          const threshold = (0xffffffff - (high - 1)) % high;
          while (leftover < threshold) { m = BigInt(uint32()) * excl; leftover = Number(m & 0xffffffffn); }
        }
        return Number(m >> 32n);
      };
      random.shuffle = (a) => {
        if (a.length > 2 ** 31) throw new Error(`shuffle: ${a.length} entries is more than 32-bit draws reach`);
        for (let i = a.length - 1; i > 0; i--) {
          let mask = i, j;
          for (let b = 1; b < 32; b *= 2) mask |= mask >>> b;
          do { j = (uint32() & mask) >>> 0; } while (j > i);
          const t = a[i]; a[i] = a[j]; a[j] = t;
        }
        return a;
      };
      random.clone = () => pcg64(state, inc, spare);
      random.state = () => ({ state: String(state), inc: String(inc), spare }); // numpy's bit_generator.state
      return random;
    }

    const distance = (ax, ay, bx, by) => Math.sqrt((ax - bx) * (ax - bx) + (ay - by) * (ay - by));

    // mpe2's colours (entity.color * 200) for simple_spread's agents and landmarks.
    const AGENT_COLOR = "#4646aa", LANDMARK_COLOR = "#323232";

    /* One simple_spread world with m agents and m landmarks. P holds mpe2's constants
     * (attnmarl.envs.physics.WorldParams): dt, damping, contact_force, contact_margin, agent_size,
     * landmark_size, sensitivity, mass, local_ratio, max_cycles. Positions and velocities are
     * Float64Arrays [x0, y0, x1, y1, ...]. Entities are named a1..am (agents) and L1..Lm (landmarks).
     * An observation holds slotCount landmark slots of landmarkWidth numbers; agent i's slot s holds landmark
     * slot(i, s), counted in landmarkNames() (here every agent sees the m landmarks in their own order:
     * DecoyWorld changes these four). */
    class World {
      constructor(P, m) {
        this.P = P; this.m = m;
        this.pos = new Float64Array(2 * m); this.vel = new Float64Array(2 * m);
        this.landmarks = new Float64Array(2 * m); this.steps = 0;
      }

      // Agents and landmarks uniform in [-1, 1]^2, agents at rest (Scenario.reset_world), drawn in the
      // port's order: every agent's x and y, then every landmark's.
      reset(random) {
        for (let k = 0; k < 2 * this.m; k++) this.pos[k] = random.uniform(-1, 1);
        for (let k = 0; k < 2 * this.m; k++) this.landmarks[k] = random.uniform(-1, 1);
        this.vel.fill(0); this.steps = 0;
      }

      copy() {
        const w = new this.constructor(this.P, this.m);
        w.pos.set(this.pos); w.vel.set(this.vel); w.landmarks.set(this.landmarks); w.steps = this.steps;
        return w;
      }

      get slotCount() { return this.m; }

      get landmarkWidth() { return 2; }

      slot(i, s) { return s; }

      landmarkNames() { return Array.from({ length: this.m }, (_, l) => `L${l + 1}`); }

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
            best = Math.min(best, distance(pos[2 * j], pos[2 * j + 1], landmarks[2 * l], landmarks[2 * l + 1]));
          }
          cover -= best;
        }
        const r = new Float64Array(m), reach = 2 * P.agent_size;
        for (let i = 0; i < m; i++) {
          let touching = 0;
          for (let j = 0; j < m; j++) {
            if (j !== i && distance(pos[2 * i], pos[2 * i + 1], pos[2 * j], pos[2 * j + 1]) < reach) touching += 1;
          }
          r[i] = cover * (1 - P.local_ratio) + -touching * P.local_ratio;
        }
        return r;
      }

      /* o^i as mpe2 builds it, rounded to float32 like the port's observations:
       * [v_i, p_i, (p_l - p_i) for each l, (p_j - p_i) for each j != i, c_j = (0, 0) for each j != i];
       * the landmark block is observeLandmarks'. */
      observe(i) {
        const { m, pos, vel } = this, start = 4 + this.landmarkWidth * this.slotCount;
        const o = new Float64Array(start + 4 * (m - 1)), f = Math.fround;
        o[0] = f(vel[2 * i]); o[1] = f(vel[2 * i + 1]); o[2] = f(pos[2 * i]); o[3] = f(pos[2 * i + 1]);
        this.observeLandmarks(o, i);
        let k = start;
        for (let j = 0; j < m; j++) {
          if (j === i) continue;
          o[k] = f(pos[2 * j] - pos[2 * i]); o[k + 1] = f(pos[2 * j + 1] - pos[2 * i + 1]); k += 2;
        }
        return o;
      }

      // The landmark block of o^i from index 4: p_l - p_i for each landmark l.
      observeLandmarks(o, i) {
        const { m, pos, landmarks } = this, f = Math.fround;
        for (let l = 0; l < m; l++) {
          o[4 + 2 * l] = f(landmarks[2 * l] - pos[2 * i]); o[5 + 2 * l] = f(landmarks[2 * l + 1] - pos[2 * i + 1]);
        }
      }

      tokensOf(o) { return spreadTokens(o, this.m, this.slotCount, this.landmarkWidth); }

      netOf() { return 0; } // one network for every agent

      otherNames(i) { return Array.from({ length: this.m - 1 }, (_, j) => `a${j < i ? j + 1 : j + 2}`); }

      // Agent i's tokens by what they are: itself, the landmark in each of its slots, the other agents (in agent order).
      tokenNames(i) {
        const landmarks = this.landmarkNames();
        return ["self", ...Array.from({ length: this.slotCount }, (_, s) => landmarks[this.slot(i, s)]), ...this.otherNames(i)];
      }

      // The alpha row's columns, one per entity in a fixed order: itself, the landmarks, the other agents (here the
      // tokens in their own order).
      columns(i) { return ["self", ...this.landmarkNames(), ...this.otherNames(i)]; }

      agentName(i) { return `agent a${i + 1}`; }

      /* What the arena draws, bottom to top: name, position, radius, colour, the label inside or below, the
       * agent's index (null for a landmark) and the pointer's reach; a landmark is grabbed before an agent. */
      entities() {
        const { P, m, pos, landmarks } = this, out = [];
        for (let i = 0; i < m; i++) {
          out.push({ name: `a${i + 1}`, x: pos[2 * i], y: pos[2 * i + 1], r: P.agent_size, fill: AGENT_COLOR,
            inside: true, agent: i, grab: P.agent_size, layer: 0, visible: true });
        }
        for (let l = 0; l < m; l++) {
          out.push({ name: `L${l + 1}`, x: landmarks[2 * l], y: landmarks[2 * l + 1], r: P.landmark_size,
            fill: LANDMARK_COLOR, inside: false, agent: null, grab: P.landmark_size + 0.05, layer: 1, visible: true });
        }
        return out;
      }

      // The positions of the entities whose names start with `letter`: the agents' (a) or the landmarks' (L).
      coordinates(letter) { return letter === "a" ? this.pos : this.landmarks; }

      position(name) {
        const k = Number(name.slice(1)) - 1, at = this.coordinates(name[0]);
        return [at[2 * k], at[2 * k + 1]];
      }

      // Put an entity at (x, y); an agent put there is at rest. Returns whether it could be put.
      place(name, x, y) {
        const k = Number(name.slice(1)) - 1;
        if (name[0] !== "a") { const at = this.coordinates(name[0]); at[2 * k] = x; at[2 * k + 1] = y; return true; }
        let nudge = 0; // two agents on exactly one point would push each other with 0/0 (mpe2 too): avoid it
        for (let j = 0; j < this.m; j++) if (j !== k && this.pos[2 * j] === x && this.pos[2 * j + 1] === y) nudge = 1e-9;
        this.pos[2 * k] = x + nudge; this.pos[2 * k + 1] = y; this.vel[2 * k] = 0; this.vel[2 * k + 1] = 0;
        return true;
      }
    }

    /* simple_spread with decoys (attnmarl.envs.decoys_port.BatchedDecoySpread; the reference is
     * attnmarl.envs.decoys): World's m agents and its m landmarks, the targets, which alone the physics and the
     * rewards read, and k = d m decoys (P.decoys = d) that pay nothing and neither move nor collide. Agent i sees
     * all m + k landmarks, each slot [p_l - p_i, is_target], in its own order: order[i][s] is the landmark in its
     * slot s (targets 0..m-1, then decoys m..m+k-1), shuffled at reset. Decoys are named D1..Dk. */
    class DecoyWorld extends World {
      constructor(P, m) {
        super(P, m); this.k = P.decoys * m;
        this.decoys = new Float64Array(2 * this.k);
        this.order = Array.from({ length: m }, () => Int32Array.from({ length: m + this.k }, (_, s) => s));
      }

      // World's reset (agents, then targets), then the decoys uniform in [-1, 1]^2, then each agent's slot order, a
      // shuffle of 0..m+k-1, agent by agent (DecoyScenario.reset_world; the port's Generator.permuted draws the same).
      reset(random) {
        super.reset(random);
        for (let c = 0; c < 2 * this.k; c++) this.decoys[c] = random.uniform(-1, 1);
        this.order.forEach((row) => { row.forEach((_, s) => { row[s] = s; }); random.shuffle(row); });
      }

      copy() {
        const w = super.copy();
        w.decoys.set(this.decoys); w.order.forEach((row, i) => row.set(this.order[i]));
        return w;
      }

      get slotCount() { return this.m + this.k; }

      get landmarkWidth() { return 3; }

      slot(i, s) { return this.order[i][s]; }

      landmarkNames() { return [...super.landmarkNames(), ...Array.from({ length: this.k }, (_, c) => `D${c + 1}`)]; }

      // The slots of o^i from index 4: [p_l - p_i, is_target] for the landmark l in each (DecoyScenario.observation).
      observeLandmarks(o, i) {
        const { m, pos } = this, f = Math.fround;
        this.order[i].forEach((l, s) => {
          const at = l < m ? this.landmarks : this.decoys, c = 2 * (l < m ? l : l - m);
          o[4 + 3 * s] = f(at[c] - pos[2 * i]); o[5 + 3 * s] = f(at[c + 1] - pos[2 * i + 1]); o[6 + 3 * s] = l < m ? 1 : 0;
        });
      }

      coordinates(letter) { return letter === "D" ? this.decoys : super.coordinates(letter); }

      // The alpha row's columns (World's: self, L1..Lm, then D1..Dk, then the agents) in groups, each in its colour.
      columnGroups() {
        const { m, k } = this;
        return [{ label: "targets", from: 1, to: 1 + m, color: LANDMARK_COLOR },
          { label: "decoys", from: 1 + m, to: 1 + m + k, color: this.P.decoy_color },
          { label: "other agents", from: 1 + m + k, to: 2 * m + k, color: AGENT_COLOR }];
      }

      // World's entities with the decoys between the agents and the targets: drawn under the targets, their labels last.
      entities() {
        const { P } = this, out = super.entities();
        out.splice(this.m, 0, ...Array.from({ length: this.k }, (_, c) => ({ name: `D${c + 1}`, x: this.decoys[2 * c],
          y: this.decoys[2 * c + 1], r: P.landmark_size, fill: P.decoy_color, inside: false, agent: null,
          grab: P.landmark_size + 0.05, layer: 1, visible: true, role: "decoy", labelRank: 3 })));
        return out;
      }
    }

    // collect_treasure's colours: mpe2's treasure types (blue, orange, ...), a deposit in a darker shade of its
    // type's, a collector grey, or 0.85 of the colour of the treasure it carries (as mpe2 colours it).
    const TYPE_COLORS = [[0.212, 0.408, 0.776], [0.945, 0.553, 0.0], [0.169, 0.627, 0.173], [0.839, 0.149, 0.157],
      [0.580, 0.404, 0.741], [0.549, 0.337, 0.294]];
    const shade = (rgb, k) => `rgb(${rgb.map((c) => Math.round(255 * k * c)).join(",")})`;
    const COLLECTOR_COLOR = "#d0d0d0";

    /* One collect_treasure world (attnmarl.envs.treasure.BatchedCollectTreasure): m - K collectors, then K
     * deposits (deposit d accepts treasure of type d), and m - K treasures. P: dt, damping, collector_size,
     * deposit_size, treasure_size, collector_mass, deposit_mass, sensitivity, max_speed, num_deposits (K),
     * respawn_bound, gone, max_cycles. Nothing collides; agents have a speed limit. State: positions and
     * velocities of the agents, treasures' positions, alive and type, and what each collector holds (a type,
     * -1 for nothing). Its generator (from reset) draws the respawns. Entities are named c1.. (collectors),
     * d1.. (deposits) and t1.. (treasures). */
    class TreasureWorld {
      constructor(P, m) {
        this.P = P; this.m = m; this.K = P.num_deposits; this.C = m - this.K; this.T = this.C;
        this.pos = new Float64Array(2 * m); this.vel = new Float64Array(2 * m);
        this.treasures = new Float64Array(2 * this.T); this.alive = new Uint8Array(this.T);
        this.type = new Int32Array(this.T); this.holding = new Int32Array(this.C).fill(-1);
        this.steps = 0; this.random = null;
        this.pickups = 0; this.deliveries = 0; // in this episode
      }

      /* Scenario.reset_world as the port draws it: agents uniform in [-1, 1]^2 at rest, empty handed; then the
       * treasures' types, then their positions, uniform in [-0.95, 0.95]^2. */
      reset(random) {
        const { P } = this, b = P.respawn_bound;
        for (let k = 0; k < 2 * this.m; k++) this.pos[k] = random.uniform(-1, 1);
        this.vel.fill(0); this.holding.fill(-1); this.alive.fill(1);
        for (let t = 0; t < this.T; t++) this.type[t] = random.integers(this.K);
        for (let k = 0; k < 2 * this.T; k++) this.treasures[k] = random.uniform(-b, b);
        this.steps = 0; this.random = random; this.pickups = 0; this.deliveries = 0;
      }

      copy() {
        const w = new TreasureWorld(this.P, this.m);
        ["pos", "vel", "treasures", "alive", "type", "holding"].forEach((key) => w[key].set(this[key]));
        Object.assign(w, { steps: this.steps, pickups: this.pickups, deliveries: this.deliveries,
          random: this.random && this.random.clone() });
        return w;
      }

      size(i) { return i < this.C ? this.P.collector_size : this.P.deposit_size; }

      /* One step with discrete actions: forces, integration (p += v dt; v = v (1 - damping) + f / mass dt, then
       * v scaled down to max_speed if faster), then post_step (pickups, respawns, deliveries) and the rewards.
       * Returns the m rewards; this.last holds the step's pickups and deliveries. */
      step(actions) {
        const { P, m, C, pos, vel } = this;
        for (let i = 0; i < m; i++) {
          const a = MOVES[actions[i]], mass = i < C ? P.collector_mass : P.deposit_mass;
          for (let c = 2 * i; c < 2 * i + 2; c++) {
            pos[c] += vel[c] * P.dt;
            vel[c] *= 1 - P.damping;
            vel[c] += ((a[c - 2 * i] * P.sensitivity) / mass) * P.dt;
          }
          const speed = Math.sqrt(vel[2 * i] * vel[2 * i] + vel[2 * i + 1] * vel[2 * i + 1]);
          if (speed > P.max_speed) {
            vel[2 * i] = (vel[2 * i] / speed) * P.max_speed; vel[2 * i + 1] = (vel[2 * i + 1] / speed) * P.max_speed;
          }
        }
        this.steps += 1;
        return this.rewards(this.postStep());
      }

      /* Scenario.post_step in the port's order: each live treasure, in order, goes to the first touching
       * collector that holds nothing (and is parked at `gone`); the treasures gone before this step respawn
       * (every position, then every type); each carrying collector touching its type's deposit delivers.
       * Returns the global reward g = 5 (pickups + deliveries). */
      postStep() {
        const { P, C, T, pos, treasures, alive, type, holding } = this, b = P.respawn_bound;
        const goneBefore = [];
        for (let t = 0; t < T; t++) if (!alive[t]) goneBefore.push(t);
        let pickups = 0, deliveries = 0;
        for (let t = 0; t < T; t++) {
          if (!alive[t]) continue;
          for (let c = 0; c < C; c++) {
            const d = distance(treasures[2 * t], treasures[2 * t + 1], pos[2 * c], pos[2 * c + 1]);
            if (holding[c] < 0 && d < P.treasure_size + P.collector_size) {
              holding[c] = type[t]; alive[t] = 0; treasures[2 * t] = P.gone; treasures[2 * t + 1] = P.gone;
              pickups += 1;
              break;
            }
          }
        }
        goneBefore.forEach((t) => { treasures[2 * t] = this.random.uniform(-b, b); treasures[2 * t + 1] = this.random.uniform(-b, b); });
        goneBefore.forEach((t) => { type[t] = this.random.integers(this.K); alive[t] = 1; });
        for (let c = 0; c < C; c++) {
          if (holding[c] < 0) continue;
          const k = C + holding[c];
          if (distance(pos[2 * c], pos[2 * c + 1], pos[2 * k], pos[2 * k + 1]) < P.collector_size + P.deposit_size) {
            holding[c] = -1; deliveries += 1;
          }
        }
        this.last = { pickups, deliveries };
        this.pickups += pickups; this.deliveries += deliveries;
        return 5 * (pickups + deliveries);
      }

      /* Scenario's rewards after post_step, g to everyone. A collector: -5 per other collector it overlaps, and
       * -0.1 x the distance to the nearest live treasure (empty handed) or to its treasure's deposit. A deposit:
       * -0.1 x the distance to the nearest collector carrying its type, else to the collectors' centroid. */
      rewards(g) {
        const { P, m, C, T, K, pos, treasures, alive, holding } = this, r = new Float64Array(m);
        for (let c = 0; c < C; c++) {
          const x = pos[2 * c], y = pos[2 * c + 1];
          let overlaps = 0, shaping = 0;
          for (let j = 0; j < C; j++) {
            if (j !== c && distance(x, y, pos[2 * j], pos[2 * j + 1]) < 2 * P.collector_size) overlaps += 1;
          }
          if (holding[c] < 0) {
            let best = Infinity;
            for (let t = 0; t < T; t++) if (alive[t]) best = Math.min(best, distance(x, y, treasures[2 * t], treasures[2 * t + 1]));
            shaping = best < Infinity ? -0.1 * best : 0;
          } else {
            const k = C + holding[c];
            shaping = -0.1 * distance(x, y, pos[2 * k], pos[2 * k + 1]);
          }
          r[c] = -5 * overlaps + shaping + g;
        }
        let cx = 0, cy = 0;
        for (let c = 0; c < C; c++) { cx += pos[2 * c]; cy += pos[2 * c + 1]; }
        cx /= C; cy /= C;
        for (let d = 0; d < K; d++) {
          const k = C + d, x = pos[2 * k], y = pos[2 * k + 1];
          let best = Infinity;
          for (let c = 0; c < C; c++) if (holding[c] === d) best = Math.min(best, distance(x, y, pos[2 * c], pos[2 * c + 1]));
          r[k] = (best < Infinity ? -0.1 * best : -0.1 * distance(cx, cy, x, y)) + g;
        }
        return r;
      }

      /* What agent i sees, in mpe2's order: the other agents nearest first, then the live treasures nearest
       * first and the gone ones last (stable sorts, as the port's argsort). */
      order(i) {
        const { m, T, pos, treasures, alive } = this, x = pos[2 * i], y = pos[2 * i + 1];
        const sorted = (keys) => keys.map((key, k) => [key, k]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map((e) => e[1]);
        const agentKeys = Array.from({ length: m }, (_, j) => (j === i ? -1 : distance(x, y, pos[2 * j], pos[2 * j + 1])));
        const treasureKeys = Array.from({ length: T }, (_, t) => (alive[t] ? distance(x, y, treasures[2 * t], treasures[2 * t + 1]) : 1e6));
        return { agents: sorted(agentKeys).slice(1), treasures: sorted(treasureKeys) };
      }

      /* o^i as the port builds it, rounded to float32: [p_i, v_i, (holding one-hot, collectors only)], then each
       * other agent [p_j - p_i, v_j, deposit-type one-hot, holding one-hot], then each treasure
       * [p_t - p_i, type one-hot] (zeros for a gone one), in the order of order(i). */
      observe(i) {
        const { m, C, T, K, pos, vel, treasures, alive, type, holding } = this, f = Math.fround;
        const own = i < C ? K : 0, o = new Float64Array(4 + own + (m - 1) * (4 + 2 * K) + T * (2 + K));
        o[0] = f(pos[2 * i]); o[1] = f(pos[2 * i + 1]); o[2] = f(vel[2 * i]); o[3] = f(vel[2 * i + 1]);
        if (i < C && holding[i] >= 0) o[4 + holding[i]] = 1;
        let k = 4 + own;
        const { agents, treasures: ranked } = this.order(i);
        agents.forEach((j) => {
          o[k] = f(pos[2 * j] - pos[2 * i]); o[k + 1] = f(pos[2 * j + 1] - pos[2 * i + 1]);
          o[k + 2] = f(vel[2 * j]); o[k + 3] = f(vel[2 * j + 1]);
          if (j >= C) o[k + 4 + j - C] = 1;
          else if (holding[j] >= 0) o[k + 4 + K + holding[j]] = 1;
          k += 4 + 2 * K;
        });
        ranked.forEach((t) => {
          if (alive[t]) {
            o[k] = f(treasures[2 * t] - pos[2 * i]); o[k + 1] = f(treasures[2 * t + 1] - pos[2 * i + 1]);
            o[k + 2 + type[t]] = 1;
          }
          k += 2 + K;
        });
        return o;
      }

      tokensOf(o, i) { return treasureTokens(o, i < this.C, this.m, this.T, this.K); }

      netOf(i) { return i < this.C ? 0 : 1 + i - this.C; } // the collectors' network, then each deposit's

      entityName(j) { return j < this.C ? `c${j + 1}` : `d${j - this.C + 1}`; }

      agentName(i) { return `${i < this.C ? "collector" : "deposit"} ${this.entityName(i)}`; }

      // The entity behind each of agent i's tokens: itself, then the agents and treasures in order(i).
      tokenNames(i) {
        const { agents, treasures } = this.order(i);
        return ["self", ...agents.map((j) => this.entityName(j)), ...treasures.map((t) => `t${t + 1}`)];
      }

      // The alpha row's columns, one per entity in a fixed order: itself, the other agents, the treasures.
      columns(i) {
        const names = ["self"];
        for (let j = 0; j < this.m; j++) if (j !== i) names.push(this.entityName(j));
        for (let t = 0; t < this.T; t++) names.push(`t${t + 1}`);
        return names;
      }

      // What the arena draws, bottom to top (deposits, collectors, treasures), as World.entities.
      entities() {
        const { P, m, C, T, pos, treasures, alive, type, holding } = this, out = [];
        for (let j = C; j < m; j++) {
          out.push({ name: this.entityName(j), x: pos[2 * j], y: pos[2 * j + 1], r: P.deposit_size,
            fill: shade(TYPE_COLORS[j - C], 0.6), agent: j, grab: P.deposit_size, layer: 0, visible: true });
        }
        for (let c = 0; c < C; c++) {
          out.push({ name: this.entityName(c), x: pos[2 * c], y: pos[2 * c + 1], r: P.collector_size,
            fill: holding[c] < 0 ? COLLECTOR_COLOR : shade(TYPE_COLORS[holding[c]], 0.85), stroke: "#555",
            agent: c, grab: P.collector_size + 0.02, layer: 1, visible: true });
        }
        for (let t = 0; t < T; t++) {
          out.push({ name: `t${t + 1}`, x: treasures[2 * t], y: treasures[2 * t + 1], r: P.treasure_size,
            fill: shade(TYPE_COLORS[type[t]], 1), stroke: "#333", agent: null, grab: P.treasure_size + 0.05,
            layer: 2, visible: Boolean(alive[t]) });
        }
        return out;
      }

      // An entity's position; null for a gone treasure.
      position(name) {
        const k = Number(name.slice(1)) - 1;
        if (name[0] === "t") return this.alive[k] ? [this.treasures[2 * k], this.treasures[2 * k + 1]] : null;
        const j = name[0] === "c" ? k : this.C + k;
        return [this.pos[2 * j], this.pos[2 * j + 1]];
      }

      // Put an entity at (x, y); an agent put there is at rest. A gone treasure cannot be put: returns false.
      place(name, x, y) {
        const k = Number(name.slice(1)) - 1;
        if (name[0] === "t") {
          if (!this.alive[k]) return false;
          this.treasures[2 * k] = x; this.treasures[2 * k + 1] = y; return true;
        }
        const j = name[0] === "c" ? k : this.C + k;
        this.pos[2 * j] = x; this.pos[2 * j + 1] = y; this.vel[2 * j] = 0; this.vel[2 * j + 1] = 0;
        return true;
      }
    }

    /* Agent i's entity tokens from its simple_spread observation (attnmarl.envs.tokens): token 0 is itself
     * [v, p] (kind 0), tokens 1..m the landmarks [dx, dy] (kind 1), tokens m+1..2m-1 the other agents
     * [dx, dy, c_0, c_1] (kind 2), in agent order without i. Returns {kinds, features}. With decoys, `slots`
     * landmark slots of `width` 3 [dx, dy, is_target] (kind 1) in place of the m landmarks. */
    function spreadTokens(o, m, slots = m, width = 2) {
      const kinds = [0], features = [o.subarray(0, 4)];
      for (let l = 0; l < slots; l++) { kinds.push(1); features.push(o.subarray(4 + width * l, 4 + width * (l + 1))); }
      const others = 4 + width * slots, comm = others + 2 * (m - 1);
      for (let j = 0; j < m - 1; j++) {
        kinds.push(2);
        features.push(Float64Array.of(o[others + 2 * j], o[others + 2 * j + 1], o[comm + 2 * j], o[comm + 2 * j + 1]));
      }
      return { kinds, features };
    }

    /* An agent's entity tokens from its collect_treasure observation (attnmarl.envs.tokens), as they lie in it:
     * itself [p, v, (holding one-hot if a collector)] (kind 0), the m - 1 other agents nearest first
     * [dx, dy, v, deposit one-hot, holding one-hot] (kind 1), the T treasures [dx, dy, type one-hot]
     * (kind 2). K types. A deposit's observation may carry the port's zero padding at its end. */
    function treasureTokens(o, collector, m, T, K) {
      const own = 4 + (collector ? K : 0), agent = 4 + 2 * K, treasure = 2 + K;
      const kinds = [0], features = [o.subarray(0, own)];
      for (let j = 0; j < m - 1; j++) { kinds.push(1); features.push(o.subarray(own + j * agent, own + (j + 1) * agent)); }
      const start = own + (m - 1) * agent;
      for (let t = 0; t < T; t++) { kinds.push(2); features.push(o.subarray(start + t * treasure, start + (t + 1) * treasure)); }
      return { kinds, features };
    }

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
     * The embedding's columns hold each kind's features side by side (W.kind_start), then one flag column
     * per kind whose weights are the kind's bias (W.kind_flag; policies._token_index). The score is computed
     * as <W_k,h^T q_h, z_n> and the value as W_v,h applied once to the weighted sum of z, as the Python
     * forward does: the same numbers with fewer multiplications. */
    function entityForward(W, tokens, mask) {
      const { hid, alpha } = entityHidden(W, tokens, mask);
      return { logits: affine(W.W_y, W.W_y_b, layerNorm(hid, W.ln_out_w, W.ln_out_b, W.eps), W.d_y, W.d), alpha };
    }

    /* entityForward up to the self token's h after the feed-forward block, before its last LN: {hid, alpha}.
     * LN(hid) is what the policy head W_y reads, and a communicating actor's encoding h^i (EntityEncoder). */
    function entityHidden(W, tokens, mask) {
      const { d, heads, d_tokens: dt, d_ff: dff, eps } = W;
      const n = tokens.kinds.length, dh = d / heads, scale = 1 / Math.sqrt(dh);
      const z = new Float64Array(n * d), e0 = new Float64Array(d), en = new Float64Array(d);
      const gamma = W.ln_attn_w, beta = W.ln_attn_b, embed = W.embed;
      for (let t = 0; t < n; t++) { // e_n, then z_n = LN(e_n) into row t of z
        const kind = tokens.kinds[t], x = tokens.features[t], start = W.kind_start[kind], flag = W.kind_flag[kind];
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
      return { hid, alpha };
    }

    /* Limited sight on agent i's simple_spread observation o (attnmarl.envs.sight.apply_sight): every landmark
     * and other agent farther than rho is zeroed (its offset, and an agent's channel too), and the key mask is
     * [true (self); visible] (SightedEntityActor.masks). |offset|^2 <= rho^2 is computed in float32, as torch
     * and numpy compute it on float32 observations. Returns {tokens, mask}. */
    function sightTokens(o, m, rho) {
      const f = Math.fround, sighted = Float64Array.from(o), mask = [true], limit = f(rho * rho);
      const channels = 4 + 2 * m + 2 * (m - 1);
      for (let e = 0; e < 2 * m - 1; e++) { // the m landmarks, then the m - 1 other agents: offsets at 4 + 2e
        const at = 4 + 2 * e, seen = f(f(o[at] * o[at]) + f(o[at + 1] * o[at + 1])) <= limit;
        mask.push(seen);
        if (seen) continue;
        sighted[at] = 0; sighted[at + 1] = 0;
        if (e >= m) { const c = channels + 2 * (e - m); sighted[c] = 0; sighted[c + 1] = 0; }
      }
      return { tokens: spreadTokens(sighted, m), mask };
    }

    const joined = (a, b) => { const x = new Float64Array(a.length + b.length); x.set(a); x.set(b, a.length); return x; };

    /* CommActor (attnmarl.nets.messages) for the whole team, from every agent's observation: agent i's encoding
     * h^i = LN(hid) of its entity layer on the tokens it sees; then W.rounds rounds of messages
     *   v^j = W_v h^j,  alpha^{ij} = softmax_j(<W_q h^i, W_k h^j> / sqrt(d_k))  ("attention"; "mean": 1/m,
     *   "none": 0),  c^i = sum_j alpha^{ij} v^j,  and between rounds h^i <- tanh(W_u [h^i; c^i] + b_u);
     * then y^i = W_y ReLU(W_a [h^i; c^i] + b_a) + b_y. Returns {logits (per agent), alpha (per agent, l x n over
     * its tokens), messages (per round, m rows of m: receiver i over senders j), seen (per agent, its key mask)}. */
    function commForward(W, obs) {
      const m = obs.length, { d, d_k: dk } = W;
      const sight = obs.map((o) => sightTokens(o, m, W.rho));
      const enc = sight.map((s) => entityHidden(W, s.tokens, s.mask));
      let h = enc.map((e) => layerNorm(e.hid, W.ln_out_w, W.ln_out_b, W.eps)), c = null;
      const messages = [];
      for (let r = 0; r < W.rounds; r++) {
        const alpha = Array.from({ length: m }, () => new Float64Array(m));
        const v = W.messages === "none" ? null : h.map((x) => affine(W.msg_W_v, null, x, d, d));
        if (W.messages === "attention") {
          const q = h.map((x) => affine(W.msg_W_q, null, x, dk, d)), k = h.map((x) => affine(W.msg_W_k, null, x, dk, d));
          alpha.forEach((row, i) => {
            for (let j = 0; j < m; j++) { let s = 0; for (let a = 0; a < dk; a++) s += q[i][a] * k[j][a]; row[j] = s / Math.sqrt(dk); }
            const top = Math.max(...row);
            let total = 0;
            for (let j = 0; j < m; j++) { row[j] = Math.exp(row[j] - top); total += row[j]; }
            for (let j = 0; j < m; j++) row[j] /= total;
          });
        } else if (W.messages === "mean") alpha.forEach((row) => row.fill(1 / m));
        c = alpha.map((row) => {
          const ci = new Float64Array(d);
          row.forEach((a, j) => { if (a) for (let k = 0; k < d; k++) ci[k] += a * v[j][k]; });
          return ci;
        });
        messages.push(alpha);
        if (r + 1 < W.rounds) h = h.map((x, i) => affine(W.W_u, W.W_u_b, joined(x, c[i]), d, 2 * d).map(Math.tanh));
      }
      const logits = h.map((x, i) => {
        const hidden = affine(W.W_a, W.W_a_b, joined(x, c[i]), W.d_hidden, 2 * d);
        for (let k = 0; k < hidden.length; k++) hidden[k] = Math.max(0, hidden[k]);
        return affine(W.W_y, W.W_y_b, hidden, W.d_y, W.d_hidden);
      });
      return { logits, alpha: enc.map((e) => e.alpha), messages, seen: sight.map((s) => s.mask) };
    }

    /* erf(x) to double precision: its Maclaurin series for |x| < 3, else 1 - erfc(|x|) by erfc's continued fraction
     * (evaluated from its 60th term up), signed; within 1e-13 of the exact value. torch's exact GELU needs it;
     * JavaScript's Math has none. */
    function erf(x) {
      const a = Math.abs(x);
      if (a < 3) {
        let term = a, sum = a;
        for (let n = 1; Math.abs(term) > 1e-17 * Math.abs(sum); n++) { term *= -a * a / n; sum += term / (2 * n + 1); }
        return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
      }
      let f = a;
      for (let k = 60; k >= 1; k--) f = a + (k / 2) / f;
      return Math.sign(x) * (1 - Math.exp(-a * a) / (Math.sqrt(Math.PI) * f));
    }

    // torch.nn.GELU (approximate="none"): x Phi(x) = x (1 + erf(x / sqrt 2)) / 2.
    const gelu = (x) => 0.5 * x * (1 + erf(x / Math.SQRT2));

    /* MATAttention (attnmarl.nets.mat), split as the package splits it: keys and values of rows x, [K; V] = W_kv x + b
     * (matKeysValues), and the output for one query row x_q over a list of such rows (matAttend): head h
     * softmax(Q_h K_h^T / sqrt(d / l)) V_h, then W_o over the heads side by side. A causal attention is the same with
     * the list cut at the query's own position; tensors are named p + "W_q", ... */
    const matKeysValues = (W, p, x) => affine(W[p + "W_kv"], W[p + "W_kv_b"], x, 2 * W.d, W.d);

    function matAttend(W, p, xq, KV) {
      const d = W.d, heads = W.mat_heads, dh = d / heads, n = KV.length;
      const q = affine(W[p + "W_q"], W[p + "W_q_b"], xq, d, d), c = new Float64Array(d), score = new Float64Array(n);
      for (let h = 0; h < heads; h++) {
        let top = -Infinity, total = 0;
        for (let j = 0; j < n; j++) {
          let v = 0;
          for (let a = 0; a < dh; a++) v += q[h * dh + a] * KV[j][h * dh + a];
          score[j] = v / Math.sqrt(dh); top = Math.max(top, score[j]);
        }
        for (let j = 0; j < n; j++) { score[j] = Math.exp(score[j] - top); total += score[j]; }
        for (let j = 0; j < n; j++) for (let a = 0; a < dh; a++) c[h * dh + a] += (score[j] / total) * KV[j][d + h * dh + a];
      }
      return affine(W[p + "W_o"], W[p + "W_o_b"], c, d, d);
    }

    // LN(x + y) with the layer norm p + "_w", p + "_b"; x, y d-vectors.
    function addNorm(W, p, x, y) {
      const s = new Float64Array(x.length);
      for (let k = 0; k < x.length; k++) s[k] = x[k] + y[k];
      return layerNorm(s, W[p + "_w"], W[p + "_b"], W.eps);
    }

    // The position-wise MLP of a MAT block: ff2 GELU(ff0 x).
    function matFeedForward(W, p, x) {
      const inner = affine(W[p + "ff0"], W[p + "ff0_b"], x, W.d_ff, W.d).map(gelu);
      return affine(W[p + "ff2"], W[p + "ff2_b"], inner, W.d, W.d_ff);
    }

    /* MultiAgentTransformer.decode for the whole team, in agent order, each agent's action the argmax of its logits
     * (the book's evaluation), from every agent's observation:
     *   x^i = LN_out(entityHidden(tokens of o^i))                        agent i's token (AgentTokens)
     *   o_hat <- LN(o_hat + Attn(o_hat, o_hat));  o_hat <- LN(o_hat + FF(o_hat))   each encoder block (EncoderBlock)
     *   position i's input: GELU(E onehot(a^{i-1})) (the start token for i = 1); each decoder block (DecoderBlock.step)
     *     y <- LN(y + Attn(y, y_{<=i}));  y <- LN(o_hat^i + Attn(query o_hat^i, keys y_{<=i}));  y <- LN(y + FF(y))
     *   logits^i = W_y ReLU(W_a y^i + b_a) + b_y;  a^i = argmax logits^i, fed back as position i + 1's input.
     * Each block keeps the keys and values of the positions decided so far (the package's cache), so each of the m
     * passes computes one position. masks[i] (true = shown) hides tokens from agent i's token layer.
     * Returns {actions, logits, alpha (per agent, l x n over its tokens, the token layer's)}. */
    function matForward(W, obs, masks) {
      const m = obs.length, d = W.d;
      const hidden = obs.map((o, i) => entityHidden(W, spreadTokens(o, m), masks ? masks[i] : null));
      let oHat = hidden.map((e) => layerNorm(e.hid, W.ln_out_w, W.ln_out_b, W.eps));
      for (let b = 0; b < W.blocks; b++) {
        const p = `enc${b}_`, KV = oHat.map((x) => matKeysValues(W, p + "attn_", x));
        const attended = oHat.map((x) => matAttend(W, p + "attn_", x, KV));
        oHat = oHat.map((x, t) => addNorm(W, p + "ln_attn", x, attended[t]));
        oHat = oHat.map((x) => addNorm(W, p + "ln_ff", x, matFeedForward(W, p, x)));
      }
      const caches = Array.from({ length: W.blocks }, () => ({ self: [], cross: [] }));
      const actions = [], logits = [];
      for (let i = 0; i < m; i++) {
        const onehot = new Float64Array(W.n_actions + 1);
        onehot[i === 0 ? W.n_actions : actions[i - 1]] = 1;
        let y = affine(W.act_embed, W.act_embed_b, onehot, d, W.n_actions + 1).map(gelu);
        caches.forEach((cache, b) => {
          const p = `dec${b}_`;
          cache.self.push(matKeysValues(W, p + "self_attn_", y));
          y = addNorm(W, p + "ln_self", y, matAttend(W, p + "self_attn_", y, cache.self));
          cache.cross.push(matKeysValues(W, p + "cross_attn_", y));
          y = addNorm(W, p + "ln_cross", oHat[i], matAttend(W, p + "cross_attn_", oHat[i], cache.cross));
          y = addNorm(W, p + "ln_ff", y, matFeedForward(W, p, y));
        });
        const head = affine(W.W_a, W.W_a_b, y, W.d_hidden, d).map((v) => Math.max(0, v));
        logits.push(affine(W.W_y, W.W_y_b, head, W.n_actions, W.d_hidden));
        actions.push(argmax(logits[i]));
      }
      return { actions, logits, alpha: hidden.map((e) => e.alpha) };
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

    const fromBase64 = (text) => Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));

    /* A pack of weights as attnmarl.notebook.playground._pack wrote it, made ready for decodeWeights: a compressed
     * pack's base64 is the gzip of the float32 buffer's byte planes (every float's first byte, then every
     * second byte, ...), which this inflates and interleaves back into the little-endian floats. */
    async function inflateWeights(spec) {
      if (!spec.compressed) return spec;
      const stream = new Blob([fromBase64(spec.data)]).stream().pipeThrough(new DecompressionStream("gzip"));
      const planes = new Uint8Array(await new Response(stream).arrayBuffer()), n = planes.length / 4;
      const bytes = new Uint8Array(planes.length);
      for (let b = 0; b < 4; b++) for (let k = 0; k < n; k++) bytes[4 * k + b] = planes[b * n + k];
      return Object.assign({}, spec, { data: null, floats: new Float32Array(bytes.buffer) });
    }

    /* Float32 weights (an inflated pack, or an uncompressed one: base64 of the little-endian floats), cut into
     * named tensors of the lengths given; an entity actor's kind widths give where each kind's features and
     * flag sit in its embedding (kind_start, kind_flag). */
    function decodeWeights(spec) {
      const all = spec.floats || new Float32Array(fromBase64(spec.data).buffer);
      const W = Object.assign({}, spec.sizes);
      let at = 0;
      spec.tensors.forEach(([name, count]) => { W[name] = all.subarray(at, at + count); at += count; });
      if (W.kind_widths) {
        const widths = W.kind_widths, flags = widths.reduce((a, b) => a + b, 0);
        W.kind_start = widths.map((_, k) => widths.slice(0, k).reduce((a, b) => a + b, 0));
        W.kind_flag = widths.map((_, k) => flags + k);
      }
      return W;
    }

    /* The page's data (the JSON of element `id`-data) with every weight pack inflated. */
    async function loadSpec(id) {
      const spec = JSON.parse(document.getElementById(id + "-data").textContent);
      for (const task of spec.tasks) {
        const t = spec[task];
        if (t.entity) t.entity = Array.isArray(t.entity) ? await Promise.all(t.entity.map(inflateWeights)) : await inflateWeights(t.entity);
        if (t.flat) t.flat = await inflateWeights(t.flat);
        if (t.mat) t.mat = await inflateWeights(t.mat);
        if (t.comm) for (const p of Object.keys(t.comm)) t.comm[p] = await inflateWeights(t.comm[p]);
      }
      return spec;
    }

    /* Every agent's action in world w under a policy: "entity", "flat" or "mat" (the greedy, argmax action
     * of the actor, as the book evaluates it; MAT's decoded agent by agent) or "greedy" (the assignment baseline). weights.entity: one
     * entity network, or one per agent type (w.netOf(i) picks agent i's). masks[i], if given, hides tokens
     * from agent i (entity actor only). Returns {actions, logits, alpha} (logits: per agent, for the entity actor
     * and a communicating one; alpha: per agent, l x n, for the entity actor; else null). A communicating actor
     * (weights.comm[policy]) also returns its messages' alpha and what each agent sees (commForward). */
    function teamActions(policy, w, weights, masks) {
      const obs = Array.from({ length: w.m }, (_, i) => w.observe(i));
      if (weights.comm && weights.comm[policy]) {
        const r = commForward(weights.comm[policy], obs);
        return { actions: r.logits.map(argmax), logits: r.logits, alpha: r.alpha, messages: r.messages, seen: r.seen };
      }
      if (policy === "greedy") return { actions: greedyActions(w.P, obs), alpha: null };
      if (policy === "mat") return matForward(weights.mat, obs, masks);
      if (policy === "flat") return { actions: obs.map((o) => argmax(flatForward(weights.flat, o))), alpha: null };
      const nets = [].concat(weights.entity);
      const out = obs.map((o, i) => entityForward(nets[w.netOf(i)], w.tokensOf(o, i), masks ? masks[i] : null));
      return { actions: out.map((r) => argmax(r.logits)), logits: out.map((r) => r.logits), alpha: out.map((r) => r.alpha) };
    }

    // ---- the widget -------------------------------------------------------------------------------

    // The heads of the focused agent's attention, told apart by hue and by line: red solid, blue dashed, ...
    const HEAD_COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"], HEAD_DASHES = ["none", "7 3", "2 3", "9 3 2 3"];
    const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"];
    const SPEEDS = [["slow", 3], ["normal", 8], ["fast", 20]];
    const SIGHT_FILL = "#e8eef6", MESSAGE_COLOR = "#9467bd"; // attnmarl.notebook.explorers.comm.SIGHT_DISC; DESIGN_COLOURS["attention"]
    const SIZE = 400, LIM = 1.4; // the arena: [-lim, lim]^2 in a SIZE x SIZE square, lim from LIM up
    const fmt = (v, k) => (Math.abs(v) < 0.5 * 10 ** -k ? 0 : v).toFixed(k);

    function viridis(t) { // the book's colour scale (explorer.js color): t in [0, 1]
      t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
      const i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i;
      const a = [1, 3, 5].map((k) => parseInt(VIRIDIS[i].slice(k, k + 2), 16));
      const b = [1, 3, 5].map((k) => parseInt(VIRIDIS[i + 1].slice(k, k + 2), 16));
      return `rgb(${a.map((v, k) => Math.round(v + f * (b[k] - v))).join(",")})`;
    }

    /* What the widget needs to know of each task beyond its world: its name in the menu, the teams it plays
     * (policy, label; the first, the lead, keeps the clock), whose token attention the panel shows (attends, with
     * attention: how the panel names it and its team; else the entity actor's), what a token's place is
     * when it is not its entity's own (tokenOrder: "token", ranked by distance, or "slot", shuffled per agent;
     * then the alpha row maps the tokens back to entities), whether the table counts pickups and deliveries
     * (counts), whether its actors talk (comm: the panel shows alpha over the senders, the arena the focused
     * agent's sight), what a reader can do, and a note on the team size (pg: the playground). A world with decoys
     * (DecoyWorld) adds a d menu, and the panel the decoys' part of the landmarks' alpha. */
    const TASKS = {
      simple_spread: {
        label: "simple_spread",
        World,
        policies: [["entity", "entity-attention actor"], ["flat", "flat MLP actor"], ["greedy", "greedy assignment"]],
        tokenOrder: null,
        help: "Drag a landmark or an agent, even while the team plays. Click an agent to see its attention &alpha; " +
          "(arrows and the row of cells); click a cell to hide that token from it.",
        note: (pg) => (pg.m === pg.flatM ? "" :
          `The flat actor reads an agent's observation as one vector of 6m numbers, and its first layer has exactly ` +
          `${6 * pg.flatM} inputs: it can only play at m = ${pg.flatM}, the m it was trained for. ` +
          `The entity actor reads a set of tokens, any number of them: the same weights play at every m.`),
      },
      collect_treasure: {
        label: "collect_treasure",
        World: TreasureWorld,
        policies: [["entity", "entity-attention actor"]],
        tokenOrder: "token",
        counts: true,
        help: "Drag a treasure, a collector or a deposit, even while the team plays. Click a collector or a deposit " +
          "to see its attention &alpha; (arrows and the row of cells, one per entity); click a cell to hide that " +
          "entity from it.",
        note: (pg) => {
          const K = pg.P.num_deposits, c = pg.m - K, trained = pg.weights.entity[0].trained_m;
          return `${c} collector${c > 1 ? "s" : ""} (grey; in a treasure's colour while carrying it), ${K} deposits ` +
            `(the large discs: each takes the treasures of its colour) and ${c} treasure${c > 1 ? "s" : ""}. ` +
            `The actor was trained at m = ${trained}` +
            (pg.m === trained ? "." : `; at m = ${pg.m} the same weights play zero-shot.`);
        },
      },
      messages: {
        label: "simple_spread, limited sight, messages",
        World,
        policies: [["attention", "targeted messages"], ["mean", "averaged messages"], ["none", "no messages"]],
        tokenOrder: null,
        comm: true,
        help: "Drag a landmark or an agent, even while the teams play. Click an agent: the pale disc is what it sees, " +
          "the lines and the row of cells show whom it hears, &alpha; over the senders' messages (the targeted team's).",
        note: (pg) => {
          const W = pg.weights.comm.attention, trained = W.trained_m;
          return `Each agent sees only the landmarks and agents within ρ = ${W.rho} of it (faded: unseen by the ` +
            `agent clicked), and every agent hears every message. The three teams differ only in how they weigh ` +
            `the messages. Trained at m = ${trained}` + (pg.m === trained ? "." : `; at m = ${pg.m} the same weights play zero-shot.`);
        },
      },
      sequence: {
        label: "simple_spread, the team as a sequence (MAT)",
        World,
        policies: [["mat", "Multi-Agent Transformer"], ["entity", "entity-attention actor (MAPPO)"], ["greedy", "greedy assignment"]],
        attends: "mat",
        attention: ["MAT's token layer for", "MAT"],
        tokenOrder: null,
        help: "Drag a landmark or an agent, even while the teams play. Click an agent to see the attention &alpha; of MAT's " +
          "token layer over what that agent observes (arrows and the row of cells); click a cell to hide that token " +
          "from the agent in both learned teams.",
        note: (pg) => {
          const trained = pg.weights.mat.trained_m;
          return `MAT decides the agents' actions one after another, a1 first: each agent's choice draws on every ` +
            `agent's observation and on the actions already chosen (centralized execution: ${pg.m} decoder passes a ` +
            `step). The entity actor acts on each agent's own observation. Both were trained at m = ${trained} on the ` +
            `same budget` + (pg.m === trained ? "." : `; at m = ${pg.m} the same weights play zero-shot.`);
        },
      },
      decoys: {
        label: "simple_spread with decoys",
        World: DecoyWorld,
        policies: [["entity", "entity-attention actor"]],
        tokenOrder: "slot",
        help: "Drag a target (dark grey), a decoy (orange) or an agent, even while the team plays. Click an agent to see " +
          "its attention &alpha; (arrows, and the row of cells, one per entity: targets, decoys, other agents) and, " +
          "in the bar, the part of its weight on landmarks that lands on decoys; click a cell to hide that entity from it.",
        note: (pg) => {
          const W = pg.weights.entity[0], d = pg.P.decoys, k = d * pg.m, trained = pg.m === W.trained_m && d === W.trained_d;
          return `${pg.m} targets (dark grey) and ${k} decoys (orange, d = ${d} per agent), which pay nothing. Each agent ` +
            `sees all ${pg.m + k} landmarks, each with one bit saying whether it is a target, in an order shuffled for it ` +
            `alone at every episode. The actor was trained at m = ${W.trained_m}, d = ${W.trained_d}` +
            (trained ? "." : `; here the same weights play zero-shot.`);
        },
      },
    };

    /* The playground in element `id`, with its data in `id`-data (see the header). For the task shown, a team
     * per policy plays the same episode side by side, from the same start; the arena shows the chosen one.
     * What the reader drags is moved in every team's world, so their returns stay comparable. */
    class Playground {
      constructor(root, spec) {
        this.root = root; this.spec = spec; this.m = spec.m;
        this.data = Object.fromEntries(spec.tasks.map((task) => [task, { P: spec[task].world, weights: {
          entity: spec[task].entity && [].concat(spec[task].entity).map(decodeWeights),
          flat: spec[task].flat && decodeWeights(spec[task].flat),
          mat: spec[task].mat && decodeWeights(spec[task].mat),
          comm: spec[task].comm && Object.fromEntries(Object.entries(spec[task].comm).map(([p, w]) => [p, decodeWeights(w)])),
        } }]));
        this.policy = spec.policy; this.focus = 0; this.running = false; this.speed = 1;
        this.hidden = new Set(); // "i:entity name" -- tokens hidden from agent i (entity actor only)
        this.drag = null;
        this.build();
        this.setTask(spec.tasks[0], spec.seed);
      }

      // The team whose attention the panel and the arrows show: the task's "attends", else the entity actor.
      get attends() { return this.task.attends || "entity"; }

      // The heads of that team's token attention.
      alphaHeads() { return [].concat(this.weights[this.attends])[0].heads; }

      available(policy) {
        return this.task.policies.some(([p]) => p === policy) && (policy !== "flat" || this.m === this.flatM);
      }

      build() {
        const speeds = SPEEDS.map(([n], k) => `<option value="${k}"${k === this.speed ? " selected" : ""}>${n}</option>`).join("");
        const tasks = this.spec.tasks.map((t) => `<option value="${t}">${TASKS[t].label}</option>`).join("");
        this.root.innerHTML =
          `<div class="pg-title"></div>` +
          `<div class="pg-controls">` +
          (this.spec.tasks.length > 1 ? `<label>task <select data-act="task" aria-label="task">${tasks}</select></label>` : "") +
          `<button data-act="play" aria-label="play or pause" aria-keyshortcuts="p">play</button>` +
          `<button data-act="step" aria-keyshortcuts="s">step</button><button data-act="reset">new episode</button>` +
          `<label>m <input type="range" data-act="m" step="1" value="${this.m}" aria-label="number of agents m">` +
          `<span class="pg-m"></span></label>` +
          `<label class="pg-d">d <select data-act="d" aria-label="decoys per agent d"></select></label>` +
          `<label class="pg-policy">policy <select data-act="policy" aria-label="policy"></select></label>` +
          `<label>speed <select data-act="speed" aria-label="speed">${speeds}</select></label>` +
          `<button data-act="unhide">show all tokens</button></div>` +
          `<div class="pg-note"></div>` +
          `<div class="pg-panels"><svg class="pg-arena" viewBox="0 0 ${SIZE} ${SIZE}" role="group" tabindex="-1" ` +
          `aria-label="the arena: Tab to an agent or a landmark, move it with the arrow keys"></svg><div class="pg-side"><div class="pg-returns"></div><div class="pg-alpha"></div></div></div>` +
          `<div class="pg-help"></div>`;
        this.svg = this.root.querySelector(".pg-arena");
        const on = (act, ev, fn) => { const el = this.root.querySelector(`[data-act="${act}"]`); if (el) el.addEventListener(ev, fn); };
        on("task", "change", (e) => this.setTask(e.target.value, this.seed));
        on("play", "click", () => this.setRunning(!this.running));
        on("step", "click", () => { this.setRunning(false); this.tick(); });
        on("reset", "click", () => this.reset(this.seed + 1));
        on("m", "input", (e) => this.setM(Number(e.target.value), this.seed));
        on("d", "change", (e) => this.setD(Number(e.target.value)));
        on("policy", "change", (e) => this.setPolicy(e.target.value));
        on("speed", "change", (e) => { this.speed = Number(e.target.value); });
        on("unhide", "click", () => { this.hidden.clear(); this.decide(); this.draw(); });
        window.attnmarlDrag.attach(this.svg, { handles: ".pg-agent, .pg-landmark", grab: (target, at) => this.grab(at),
          move: ([x, y]) => this.moveTo(x, y), end: () => { this.drag = null; } });
        this.svg.addEventListener("keydown", (e) => this.key(e));
        this.svg.addEventListener("focusin", (e) => this.select(e.target));
        this.root.addEventListener("keydown", (e) => this.shortcut(e));
        const alphaBox = this.root.querySelector(".pg-alpha");
        alphaBox.addEventListener("mouseover", (e) => {
          const cell = e.target.closest("rect[data-token]");
          this.hover = cell ? this.cells.indexOf(cell) : null; this.updateAlpha();
        });
        alphaBox.addEventListener("mouseleave", () => { this.hover = null; this.updateAlpha(); });
        alphaBox.addEventListener("click", (e) => {
          const cell = e.target.closest("[data-token]");
          if (cell && cell.dataset.token !== "0") this.toggleToken(cell.dataset.name);
        });
      }

      // Another task: its world, weights, teams and range of m; the team size (and d) is kept where the task allows it.
      setTask(task, seed) {
        this.taskName = task; this.task = TASKS[task]; this.lead = this.task.policies[0][0];
        Object.assign(this, this.data[task]);
        const choices = this.P.d_choices, dMenu = this.root.querySelector('[data-act="d"]');
        this.root.querySelector(".pg-d").style.display = choices ? "" : "none";
        if (choices) {
          if (!choices.includes(this.d)) this.d = this.P.decoys;
          this.P = Object.assign({}, this.P, { decoys: this.d });
          dMenu.innerHTML = choices.map((d) => `<option value="${d}"${d === this.d ? " selected" : ""}>${d}</option>`).join("");
        }
        this.flatM = this.weights.flat ? this.weights.flat.trained_m : null;
        this.focus = 0; this.drawn = null;
        const [lo, hi] = this.spec[task].m_range, slider = this.root.querySelector('[data-act="m"]');
        slider.min = String(lo); slider.max = String(hi);
        const select = this.root.querySelector('[data-act="task"]');
        if (select) select.value = task;
        this.root.querySelector(".pg-title").textContent = `Playground: trained agents on ${this.task.label}, running in this page`;
        this.root.querySelector('[data-act="unhide"]').style.display = this.task.comm ? "none" : "";
        this.root.querySelector(".pg-help").innerHTML = this.task.help;
        this.root.querySelector(".pg-policy").style.display = this.task.policies.length > 1 ? "" : "none";
        this.root.dataset.task = task;
        this.setM(Math.min(hi, Math.max(lo, this.m)), seed);
      }

      // A new team size: new worlds, every statistic starts again.
      setM(m, seed) {
        this.m = m; this.hidden.clear(); this.focus = Math.min(this.focus, m - 1);
        this.finished = Object.fromEntries(this.task.policies.map(([p]) => [p, []]));
        this.root.querySelector(".pg-m").textContent = String(m);
        this.root.querySelector('[data-act="m"]').value = String(m);
        if (!this.available(this.policy)) this.policy = this.lead;
        this.root.querySelector('[data-act="policy"]').innerHTML = this.task.policies.map(([p, label]) =>
          `<option value="${p}"${p === this.policy ? " selected" : ""}${this.available(p) ? "" : " disabled"}>` +
          `${label}${this.available(p) ? "" : ` (m = ${this.flatM} only)`}</option>`).join("");
        this.root.querySelector(".pg-note").textContent = this.task.note(this);
        this.reset(seed);
      }

      // Another number of decoys per agent (a task with decoys): new worlds, every statistic starts again.
      setD(d) {
        if (!(this.P.d_choices || []).includes(d)) throw new Error(`${this.taskName} offers no d = ${d}`);
        this.d = d; this.P = Object.assign({}, this.P, { decoys: d });
        this.root.querySelector('[data-act="d"]').value = String(d);
        this.setM(this.m, this.seed);
      }

      setPolicy(policy) {
        if (!this.available(policy)) throw new Error(`the policy ${policy} does not play ${this.taskName} at m = ${this.m}`);
        this.policy = policy; this.root.querySelector('[data-act="policy"]').value = policy; this.draw();
      }

      // A new episode from the seed's start, the same for every team.
      reset(seed) {
        this.seed = seed; this.lim = null;
        const start = new this.task.World(this.P, this.m);
        start.reset(numpyRandom(seed));
        this.worlds = {}; this.returns = {};
        this.task.policies.forEach(([p]) => {
          if (this.available(p)) { this.worlds[p] = start.copy(); this.returns[p] = 0; }
        });
        this.decide(); this.draw();
      }

      // The tokens hidden from each agent of world w (true = shown), in its tokens' order; null if none.
      masks(w = this.worlds[this.lead]) {
        if (!this.hidden.size) return null;
        return Array.from({ length: this.m }, (_, i) => w.tokenNames(i).map((name, t) => !t || !this.hidden.has(`${i}:${name}`)));
      }

      // Every team's next actions (and the entity actor's alpha) from its world's current state.
      decide() {
        this.next = {};
        Object.entries(this.worlds).forEach(([p, w]) => { this.next[p] = teamActions(p, w, this.weights, this.masks(w)); });
      }

      // One step of every team: physics, rewards, then the next decisions and the drawing.
      tick() {
        const end = this.P.max_cycles;
        Object.entries(this.worlds).forEach(([p, w]) => {
          const r = w.step(this.next[p].actions);
          this.returns[p] += r.reduce((a, b) => a + b, 0) / this.m;
          this.hold(w);
        });
        if (this.worlds[this.lead].steps >= end) {
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

      // ---- dragging (drag.js): the pointer's world position moves the grabbed entity in every world

      // Grab the entity under the pointer at world (x, y): of those within reach, the topmost layer's nearest (a
      // landmark or a treasure before an agent); returns its position, or null when there is none.
      grab([x, y]) {
        let best = null, bestKey = null;
        this.worlds[this.policy].entities().forEach((ent) => {
          const d = Math.hypot(ent.x - x, ent.y - y);
          if (!ent.visible || d >= ent.grab) return;
          if (!best || ent.layer > bestKey[0] || (ent.layer === bestKey[0] && d < bestKey[1])) { best = ent; bestKey = [ent.layer, d]; }
        });
        if (!best) return null;
        if (best.agent !== null) this.focus = best.agent; // a click selects an agent; only a move drags it
        this.drag = { name: best.name, x: null, y: null };
        this.draw();
        return [best.x, best.y];
      }

      // Put the dragged entity at (x, y) in every world (an agent held there is at rest; inside the view, so that
      // dragging never rescales it), then redecide.
      moveTo(x, y) {
        const edge = this.lim - 0.25;
        Object.assign(this.drag, { x: Math.max(-edge, Math.min(edge, x)), y: Math.max(-edge, Math.min(edge, y)) });
        Object.values(this.worlds).forEach((w) => this.hold(w));
        this.decide(); this.draw();
      }

      // Keep the dragged entity where the pointer holds it; a treasure picked up meanwhile ends the drag.
      hold(w) {
        if (!this.drag || this.drag.x === null) return;
        if (!w.place(this.drag.name, this.drag.x, this.drag.y)) this.drag = null;
      }

      // ---- the keyboard: Tab reaches every entity (focusing an agent selects it), the arrow keys move the focused
      // one as a drag would (Shift: farther), Enter or Space hides a landmark's token from the selected agent (and
      // shows it again); p plays or pauses, s steps, anywhere in the playground but a list or a slider.
      select(el) {
        const i = el.dataset.i;
        if (i === undefined || Number(i) === this.focus) return;
        this.focus = Number(i); this.draw();
      }

      key(e) {
        const name = e.target.dataset.name, d = name && window.attnmarlDrag.arrow(e, 0.05);
        if (d) {
          const [x, y] = this.worlds[this.policy].position(name);
          this.drag = { name, x: null, y: null };
          this.moveTo(x + d[0], y + d[1]);
          this.drag = null;
        } else if (name && window.attnmarlDrag.activates(e) && e.target.dataset.i === undefined) this.toggleToken(name);
        else return;
        e.preventDefault(); e.stopPropagation();
      }

      shortcut(e) {
        if (e.target.closest("select, input") || e.ctrlKey || e.metaKey || e.altKey) return;
        if (e.key === "p") this.setRunning(!this.running);
        else if (e.key === "s") { this.setRunning(false); this.tick(); }
      }

      // Hide the token of entity `name` from the selected agent, or show it again (the entity actor's teams only).
      toggleToken(name) {
        if (this.task.comm) return; // messages: nothing to hide
        const key = `${this.focus}:${name}`;
        if (this.hidden.has(key)) this.hidden.delete(key); else this.hidden.add(key);
        this.decide(); this.draw();
      }

      // ---- drawing. The markup is rebuilt only when what is drawn changes (the task, m, the policy shown, the
      // focused agent, the hidden tokens, the view); each step then only moves and recolours its elements.
      draw() {
        this.fitView();
        const key = [this.taskName, this.m, this.P.decoys, this.policy, this.focus, [...this.hidden].sort().join(), this.lim].join("|");
        if (key !== this.drawn) {
          const focused = this.svg.contains(document.activeElement) ? document.activeElement.dataset.name : null;
          this.buildArena(); this.buildReturns(); this.buildAlpha(); this.drawn = key;
          window.attnmarlDrag.refocus(this.svg, focused && `[data-name="${focused}"]`);
        }
        this.updateArena(); this.updateReturns(); this.updateAlpha();
        const r = this.root.dataset, t = String(this.worlds[this.lead].steps);
        if (r.m !== String(this.m)) r.m = String(this.m);
        if (this.P.d_choices && r.d !== String(this.P.decoys)) r.d = String(this.P.decoys);
        if (r.policy !== this.policy) r.policy = this.policy;
        if (r.focus !== String(this.focus)) r.focus = String(this.focus);
        if (r.t !== t) r.t = t;
      }

      /* The view [-lim, lim]^2 holds every entity the arena has shown in this episode (agents can be
       * pushed far out, past 2): lim starts at LIM and grows by steps of 0.2, never shrinking within an
       * episode, so the picture keeps its scale while the team plays. */
      fitView() {
        let reach = 0;
        this.worlds[this.policy].entities().forEach((e) => {
          if (e.visible) reach = Math.max(reach, Math.abs(e.x) + e.r, Math.abs(e.y) + e.r);
        });
        const lim = Math.max(this.lim || LIM, Math.ceil((reach + 0.05) * 5) / 5);
        if (lim !== this.lim) {
          this.lim = lim;
          this.X = (x) => ((x + lim) / (2 * lim)) * SIZE; this.Y = (y) => ((lim - y) / (2 * lim)) * SIZE;
          this.svg.dataset.square = `0,0,${SIZE},${lim}`; // for drag.js
          this.R = (r) => (r / (2 * lim)) * SIZE;
        }
      }

      buildArena() {
        const { X, Y, R } = this, w = this.worlds[this.policy], ents = w.entities();
        const text = `<text class="pg-label" text-anchor="middle" font-size="10" ` +
          `paint-order="stroke" stroke="#fff" stroke-width="2.5" stroke-opacity="0.8"></text>`;
        let s = `<rect x="0" y="0" width="${SIZE}" height="${SIZE}" fill="#fafafa" stroke="#444"/>`;
        s += `<rect x="${X(-1)}" y="${Y(1)}" width="${X(1) - X(-1)}" height="${Y(-1) - Y(1)}" fill="none" stroke="#ddd" stroke-dasharray="4 4"/>`;
        s += `<text x="6" y="${SIZE - 6}" font-size="10" fill="#888">x, y from &minus;${this.lim.toFixed(1)} to ` +
          `${this.lim.toFixed(1)}; dashed: &plusmn;1</text>`;
        if (this.task.comm) { // what the focused agent sees: a disc of radius rho, under everything else
          s += `<circle class="pg-sight" r="${R(this.weights.comm[this.policy].rho)}" fill="${SIGHT_FILL}" stroke="#9fb3c8"/>`;
        }
        const faded = (name) => this.policy === this.attends && this.hidden.has(`${this.focus}:${name}`); // hidden from the focus
        const hides = this.policy === this.attends ? `; Enter hides it from ${w.agentName(this.focus)}'s actor` : "";
        const circles = (agents) => ents.filter((e) => (e.agent !== null) === agents).map((e) =>
          `<circle class="${agents ? "pg-agent" : "pg-landmark"}" data-name="${e.name}"${agents ? ` data-i="${e.agent}"` : ""} ` +
          `tabindex="0" role="button" aria-label="${e.role || (agents ? "agent" : "landmark")} ${e.name}: drag it or move it with the arrow keys` +
          `${agents ? "; focus selects it" : hides}" ` +
          `r="${R(e.r)}"${e.stroke ? ` stroke="${e.stroke}"` : ""} fill-opacity="${faded(e.name) ? 0.3 : 0.85}"/>` +
          (e.agent === this.focus ? `<circle class="pg-ring" r="${R(e.r + 0.02)}" fill="none" stroke="#000" stroke-width="2"/>` : "")).join("");
        s += circles(true); // the agents, then the focused agent's alpha (one line per head and token, or per sender), then the small
        if (this.policy === this.attends) { // entities the lines point at (landmarks, treasures), then every label
          const heads = this.alphaHeads(), n = w.tokenNames(this.focus).length;
          for (let h = 0; h < heads; h++) {
            for (let t = 1; t < n; t++) {
              s += `<line class="pg-arrow" data-head="${h}" stroke="${HEAD_COLORS[h % HEAD_COLORS.length]}" ` +
                `stroke-dasharray="${HEAD_DASHES[h % HEAD_DASHES.length]}" stroke-linecap="round"/>`;
            }
          }
        }
        if (this.task.comm && this.policy === this.lead) {
          for (let j = 0; j < this.m; j++) if (j !== this.focus) s += `<line class="pg-message" data-sender="${j}" stroke="${MESSAGE_COLOR}" stroke-linecap="round" pointer-events="none"/>`;
        }
        s += circles(false) + text.repeat(ents.length);
        this.svg.innerHTML = s;
        const all = (cls) => Array.from(this.svg.querySelectorAll(cls));
        this.els = { entities: ents.map((e) => this.svg.querySelector(`circle[data-name="${e.name}"]`)),
          ring: this.svg.querySelector(".pg-ring"), labels: all(".pg-label"), arrows: all(".pg-arrow"),
          sight: this.svg.querySelector(".pg-sight"), messages: all(".pg-message") };
        this.els.labels.forEach((e, k) => { e.textContent = ents[k].name; });
        // labels in the order they claim room: the focused agent's, the other agents', the rest (decoys' last)
        const order = ents.map((e, k) => [e.agent === this.focus ? 0 : e.agent === null ? e.labelRank || 2 : 1, k])
          .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        this.labelOrder = order.map(([, k]) => k);
      }

      updateArena() {
        const { X, Y, R } = this;
        const w = this.worlds[this.policy], E = this.els, set = (e, name, v) => e.setAttribute(name, v);
        w.entities().forEach((e, k) => {
          const circle = E.entities[k], label = E.labels[k], cx = X(e.x), cy = Y(e.y);
          set(circle, "cx", cx); set(circle, "cy", cy);
          if (circle.getAttribute("fill") !== e.fill) set(circle, "fill", e.fill);
          if (circle.getAttribute("visibility") !== (e.visible ? "visible" : "hidden")) set(circle, "visibility", e.visible ? "visible" : "hidden");
          set(label, "x", cx); set(label, "y", e.inside ? cy - 0.4 * R(e.r) + 3 : cy + R(e.r) + 9);
          label.shown = e.visible;
          if (e.agent === this.focus) { set(E.ring, "cx", cx); set(E.ring, "cy", cy); }
        });
        this.placeLabels();
        if (this.task.comm) { this.updateSight(); return; }
        if (!E.arrows.length) return;
        const i = this.focus, alpha = this.next[this.attends].alpha[i], names = w.tokenNames(i), n = names.length;
        const [px, py] = w.position(w.entities().find((e) => e.agent === i).name), x0 = X(px), y0 = Y(py);
        const heads = alpha.length / n;
        E.arrows.forEach((line, k) => {
          const h = Math.floor(k / (n - 1)), t = 1 + (k % (n - 1)), a = alpha[h * n + t], at = w.position(names[t]);
          if (a < 0.02 || !at) { set(line, "visibility", "hidden"); return; }
          const tx = X(at[0]), ty = Y(at[1]);
          const off = (h - (heads - 1) / 2) * 3, len = Math.hypot(tx - x0, ty - y0) || 1; // heads side by side
          const ox = (-(ty - y0) / len) * off, oy = ((tx - x0) / len) * off;
          set(line, "visibility", "visible");
          set(line, "x1", x0 + ox); set(line, "y1", y0 + oy); set(line, "x2", tx + ox); set(line, "y2", ty + oy);
          set(line, "stroke-width", 1 + 6 * a); set(line, "stroke-opacity", Math.min(1, 0.2 + a));
        });
      }

      /* Messages: the focused agent's sight (its disc; what it does not see faded) and, for the lead team, one
       * line to each sender j, as wide as alpha^{ij} in the last round (the one the actor acts on). */
      updateSight() {
        const { X, Y } = this, E = this.els, i = this.focus, w = this.worlds[this.policy], set = (e, name, v) => e.setAttribute(name, v);
        const names = w.tokenNames(i), seen = this.next[this.policy].seen[i], [px, py] = w.position(`a${i + 1}`);
        set(E.sight, "cx", X(px)); set(E.sight, "cy", Y(py));
        w.entities().forEach((e, k) => {
          const t = names.indexOf(e.name), opacity = t < 0 || seen[t] ? "0.85" : "0.3"; // the focus itself: t = 0
          if (E.entities[k].getAttribute("fill-opacity") !== opacity) set(E.entities[k], "fill-opacity", opacity);
        });
        if (!E.messages.length) return;
        const rounds = this.next[this.lead].messages, alpha = rounds[rounds.length - 1][i];
        E.messages.forEach((line) => {
          const j = Number(line.dataset.sender), a = alpha[j], [tx, ty] = w.position(`a${j + 1}`);
          if (a < 0.02) { set(line, "visibility", "hidden"); return; }
          set(line, "visibility", "visible");
          set(line, "x1", X(px)); set(line, "y1", Y(py)); set(line, "x2", X(tx)); set(line, "y2", Y(ty));
          set(line, "stroke-width", 1 + 8 * a); set(line, "stroke-opacity", Math.min(1, 0.25 + a));
        });
      }

      /* Labels never overprint: the focused agent's first, then the other agents', then the rest; a label
       * whose box (10 px type, 6 px a character, with its white halo) would touch one already shown is hidden
       * until the entities move apart. A label of an entity not drawn (a treasure just picked up) is hidden. */
      placeLabels() {
        const labels = this.els.labels, shown = [];
        this.labelOrder.forEach((k) => {
          const label = labels[k];
          const x = Number(label.getAttribute("x")), y = Number(label.getAttribute("y")), w = 6 * label.textContent.length + 4;
          const box = [x - w / 2, y - 10, x + w / 2, y + 3];
          const free = label.shown && shown.every((b) => box[2] < b[0] || b[2] < box[0] || box[3] < b[1] || b[3] < box[1]);
          if (free) shown.push(box);
          if (label.getAttribute("visibility") !== (free ? "visible" : "hidden")) label.setAttribute("visibility", free ? "visible" : "hidden");
        });
      }

      buildReturns() {
        const counted = this.task.counts; // collect_treasure: the episode's pickups and deliveries too
        let s = `<table><caption>Return of ${this.task.policies.length > 1 ? "each team on the same episodes" : "the team"} ` +
          `(mean over agents, ${this.P.max_cycles} steps, m = ${this.m})</caption><tr><th>policy</th>` +
          `<th class="pg-now">this episode</th><th>mean of finished episodes</th>` +
          `${counted ? "<th>picked up / delivered</th>" : ""}</tr>`;
        this.task.policies.forEach(([p, label]) => {
          const cells = this.available(p) ? `<td data-return="0"></td><td class="pg-mean"></td>` +
            `${counted ? '<td class="pg-counts"></td>' : ""}` : `<td colspan="2">plays only at m = ${this.flatM}</td>`;
          s += `<tr data-policy="${p}"${p === this.policy ? ' class="pg-shown"' : ""}><td>${label}</td>${cells}</tr>`;
        });
        this.root.querySelector(".pg-returns").innerHTML = s + "</table>";
      }

      updateReturns() {
        const box = this.root.querySelector(".pg-returns");
        box.querySelector(".pg-now").textContent = `this episode, t = ${this.worlds[this.lead].steps}`;
        Object.entries(this.worlds).forEach(([p, w]) => {
          const row = box.querySelector(`tr[data-policy="${p}"]`), now = row.querySelector("td[data-return]");
          const done = this.finished[p], mean = done.reduce((a, b) => a + b, 0) / done.length;
          now.dataset.return = String(this.returns[p]); now.textContent = fmt(this.returns[p], 2);
          row.querySelector(".pg-mean").textContent = done.length ? `${fmt(mean, 2)} (${done.length})` : "\u2013";
          const counts = row.querySelector(".pg-counts");
          if (counts) counts.textContent = `${w.pickups} / ${w.deliveries}`;
        });
      }

      /* The focused agent's alpha: one row per head, one cell per column of the world (hidden tokens crossed out).
       * Columns too narrow for a name are named on hover; a world that groups its columns (columnGroups) has each
       * group marked in its colour below them, and a world with decoys a bar: the decoys' part of the alpha on
       * landmarks against the uniform share k / (m + k) (attnmarl.selection's read-out, for this agent and state). */
      buildAlpha() {
        if (this.task.comm) { this.buildMessages(); return; }
        const i = this.focus, w = this.worlds[this.attends], names = w.columns(i), n = names.length;
        const heads = this.alphaHeads(), groups = w.columnGroups ? w.columnGroups() : [];
        const cell = Math.min(30, Math.floor(620 / n)), row = Math.max(cell, 14), left = 52, top = 22;
        const named = cell >= 18, grid = top + heads * row, groupsAt = grid + (named ? 20 : 4);
        const shareAt = groupsAt + (groups.length ? 24 : 0), bar = 240, k = w.k || 0, uniform = k / (w.m + k);
        const width = Math.max(left + cell * n + 10, 560), height = shareAt + (k ? 36 : 0) + 20; // room for the legend
        let s = `<svg class="pg-heatmap" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" ` +
          `aria-label="alpha of ${w.agentName(i)}">`; // on a phone it narrows with the page (playground.css)
        const [whose, team] = this.task.attention || ["the entity actor's", "entity"];
        s += `<text x="${left}" y="14" font-size="12" font-weight="600">&alpha; of ${whose} ${w.agentName(i)} ` +
          `over its ${n} tokens${this.task.tokenOrder ? ", by entity" : ""}` +
          `${this.policy === this.attends ? "" : ` (in the ${team} team's world)`}</text>`;
        for (let h = 0; h < heads; h++) {
          s += `<text x="${left - 6}" y="${top + h * row + row / 2 + 4}" text-anchor="end" font-size="11" ` +
            `fill="${HEAD_COLORS[h % HEAD_COLORS.length]}">head ${h + 1}</text>`;
          for (let t = 0; t < n; t++) {
            s += `<rect data-token="${t}" data-name="${names[t]}" data-head="${h}" x="${left + t * cell}" y="${top + h * row}" ` +
              `width="${cell}" height="${row}" style="cursor:${t ? "pointer" : "default"}"/>`;
          }
        }
        this.columnColors = names.map((_, t) => (groups.find((g) => g.from <= t && t < g.to) || { color: "#000" }).color);
        names.forEach((name, t) => {
          const x = left + t * cell + cell / 2, hidden = this.hidden.has(`${i}:${name}`);
          if (named) {
            s += `<text class="pg-column" x="${x}" y="${grid + 14}" text-anchor="middle" font-size="${cell < 24 ? 9 : 11}"` +
              `${hidden ? ' text-decoration="line-through"' : ""}>${name}</text>`;
          }
          if (hidden) s += `<line x1="${x - cell / 2 + 2}" y1="${top + 2}" x2="${x + cell / 2 - 2}" y2="${grid - 2}" stroke="#fff" stroke-width="2"/>`;
        });
        groups.filter((g) => g.to > g.from).forEach((g) => {
          const x0 = left + g.from * cell, x1 = left + g.to * cell;
          s += `<rect x="${x0 + 1}" y="${groupsAt}" width="${x1 - x0 - 2}" height="4" fill="${g.color}"/>` +
            `<text x="${(x0 + x1) / 2}" y="${groupsAt + 16}" text-anchor="middle" font-size="11" fill="${g.color}">${g.label}</text>`;
        });
        if (w.k) {
          s += `<text class="pg-share-text" x="${left}" y="${shareAt + 10}" font-size="11"></text>` +
            `<rect x="${left}" y="${shareAt + 16}" width="${bar}" height="10" fill="#d8d8d8"/>` +
            `<rect class="pg-share-bar" x="${left}" y="${shareAt + 16}" width="0" height="10" fill="${this.P.decoy_color}"/>` +
            `<line x1="${left + bar * uniform}" x2="${left + bar * uniform}" y1="${shareAt + 13}" y2="${shareAt + 29}" ` +
            `stroke="#000" stroke-width="2"/>` +
            `<text x="${left + bar + 8}" y="${shareAt + 25}" font-size="11">black tick: k/(m + k) = ${uniform.toFixed(2)}, uniform</text>`;
        }
        s += `<text class="pg-scale" x="${left}" y="${height - 6}" font-size="11"></text>`;
        const box = this.root.querySelector(".pg-alpha");
        box.innerHTML = s + "</svg>";
        this.cells = Array.from(box.querySelectorAll("rect[data-token]")); this.hover = null;
        this.columnLabels = Array.from(box.querySelectorAll(".pg-column"));
        this.scale = box.querySelector(".pg-scale");
        this.share = w.k ? { text: box.querySelector(".pg-share-text"), bar: box.querySelector(".pg-share-bar"), width: bar } : null;
      }

      /* The cells' colours: column c of head h shows alpha on the token of the column's entity (the same token
       * in simple_spread; in collect_treasure, whichever rank the entity has now). A column whose entity is not
       * in the world (a treasure picked up this step, its token zeros) and a hidden one are greyed. */
      updateAlpha() {
        if (this.task.comm) { this.updateMessages(); return; }
        const i = this.focus, w = this.worlds[this.attends], alpha = this.next[this.attends].alpha[i];
        const tokens = w.tokenNames(i), columns = w.columns(i), n = columns.length;
        const token = columns.map((name) => tokens.indexOf(name));
        const vmax = Math.max(...alpha); // the colour scale runs from 0 to the row's largest alpha
        this.cells.forEach((rect, k) => { // cells in head-major order, as alpha
          const value = alpha[Math.floor(k / n) * n + token[k % n]];
          rect.setAttribute("fill", viridis(value / vmax)); rect.dataset.value = String(value);
        });
        this.columnLabels.forEach((label, c) => {
          const fill = this.hidden.has(`${i}:${columns[c]}`) || (c > 0 && !w.position(columns[c])) ? "#999" : this.columnColors[c];
          if (label.getAttribute("fill") !== fill) label.setAttribute("fill", fill);
        });
        if (this.share) this.updateShare(alpha, tokens.length);
        const hover = this.hover == null ? null : this.cells[this.hover];
        if (!hover) {
          this.scale.textContent = `${this.task.tokenOrder ? "entity" : "token (key)"} \u2014 colour: \u03b1 from 0 (dark) to ` +
            `${vmax.toFixed(2)} (yellow); hover a cell for its value`;
          return;
        }
        const c = this.hover % n, name = hover.dataset.name, gone = c > 0 && !w.position(name);
        const slot = this.task.tokenOrder === "slot" && c > 0 && token[c] <= w.slotCount; // a landmark: its slot
        const place = this.task.tokenOrder === "token" && c ? ` (token ${token[c]})` : slot ? ` (in slot ${token[c] - 1})` : "";
        this.scale.textContent = `${name}${place}, head ` +
          `${Number(hover.dataset.head) + 1}: \u03b1 = ${Number(hover.dataset.value).toFixed(3)}` +
          `${gone ? " (picked up this step: its token is zeros)" : ""}`;
      }
    }

    /* A world with decoys: the decoys' part of the alpha the focused agent's landmark slots get, each head's sums
     * averaged (attnmarl.selection.decoy_alpha's ratio, for one agent and state), as the bar's orange part and in
     * words. alpha: heads x n, over the agent's tokens (self, its slots, the other agents). */
    Playground.prototype.updateShare = function (alpha, n) {
      const i = this.focus, w = this.worlds[this.attends], heads = alpha.length / n;
      let decoys = 0, landmarks = 0;
      for (let s = 0; s < w.slotCount; s++) {
        for (let h = 0; h < heads; h++) {
          const a = alpha[h * n + 1 + s];
          landmarks += a; if (w.slot(i, s) >= w.m) decoys += a;
        }
      }
      decoys /= heads; landmarks /= heads;
      const part = landmarks > 0 ? decoys / landmarks : 0;
      this.share.bar.setAttribute("width", String(part * this.share.width));
      this.share.bar.dataset.part = String(part);
      this.share.text.textContent = `\u03b1 on decoys / \u03b1 on landmarks: ${part.toFixed(2)} ` +
        `(${decoys.toFixed(2)} / ${landmarks.toFixed(2)}, mean of the heads)`;
    };

    /* The messages panel of a task whose actors talk: the focused receiver's alpha over the m senders (itself
     * included), one row per round, in the lead (targeted) team's world. */
    Playground.prototype.buildMessages = function () {
      const i = this.focus, m = this.m, rounds = this.weights.comm[this.lead].rounds;
      const cell = Math.min(30, Math.floor(620 / m)), left = 60, top = 22;
      const width = Math.max(left + cell * m + 10, 560), height = top + rounds * cell + 40;
      let s = `<svg class="pg-heatmap" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" ` +
        `aria-label="alpha of agent a${i + 1} over the senders">`;
      s += `<text x="${left}" y="14" font-size="12" font-weight="600">&alpha; of agent a${i + 1} over the ${m} senders' ` +
        `messages${this.policy === this.lead ? "" : " (in the targeted team's world)"}</text>`;
      for (let r = 0; r < rounds; r++) {
        s += `<text x="${left - 6}" y="${top + r * cell + cell / 2 + 4}" text-anchor="end" font-size="11">round ${r + 1}</text>`;
        for (let j = 0; j < m; j++) {
          s += `<rect data-token="${j}" data-name="a${j + 1}" data-head="${r}" x="${left + j * cell}" y="${top + r * cell}" ` +
            `width="${cell}" height="${cell}"/>`;
        }
      }
      for (let j = 0; j < m; j++) {
        s += `<text class="pg-column" x="${left + j * cell + cell / 2}" y="${top + rounds * cell + 14}" text-anchor="middle" ` +
          `font-size="${cell < 24 ? 9 : 11}"${j === i ? ' font-weight="700"' : ""}>a${j + 1}</text>`;
      }
      s += `<text class="pg-scale" x="${left}" y="${height - 6}" font-size="11"></text>`;
      const box = this.root.querySelector(".pg-alpha");
      box.innerHTML = s + "</svg>";
      this.cells = Array.from(box.querySelectorAll("rect[data-token]")); this.hover = null;
      this.columnLabels = [];
      this.scale = box.querySelector(".pg-scale");
    };

    Playground.prototype.updateMessages = function () {
      const i = this.focus, m = this.m, rounds = this.next[this.lead].messages;
      const values = this.cells.map((_, k) => rounds[Math.floor(k / m)][i][k % m]);
      const vmax = Math.max(...values, 1e-12);
      this.cells.forEach((rect, k) => { rect.setAttribute("fill", viridis(values[k] / vmax)); rect.dataset.value = String(values[k]); });
      const hover = this.hover == null ? null : this.cells[this.hover];
      this.scale.textContent = hover ?
        `a${i + 1} hears ${hover.dataset.name} in round ${Number(hover.dataset.head) + 1}: \u03b1 = ${Number(hover.dataset.value).toFixed(3)}` :
        `sender \u2014 colour: \u03b1 from 0 (dark) to ${vmax.toFixed(2)} (yellow); uniform is ${(1 / m).toFixed(2)}; hover a cell`;
    };

    async function mount(id) {
      const root = document.getElementById(id);
      let pg;
      try {
        pg = new Playground(root, await loadSpec(id));
      } catch (error) {
        root.textContent = `The playground could not start in this browser: ${error}`;
        throw error;
      }
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
      World, DecoyWorld, TreasureWorld, TASKS, spreadTokens, treasureTokens, entityForward, sightTokens, commForward,
      flatForward, matForward, erf, gelu, greedyActions, teamActions, assignment, argmax, decodeWeights, inflateWeights, loadSpec, numpyRandom,
      Playground, mount,
    };
  })();
}
