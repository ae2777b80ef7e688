/**
 * rematch's extension for pi and omp: each harness event, as the harness gives it, to `rematch serve`.
 *
 * Thin on purpose (docs/live-capture.md, "pi and omp"): it translates nothing. Each event it
 * listens to becomes the `host_payload` of an IPC v2 `hook_event` request (docs/ipc-v2.md: a
 * 4-byte big-endian length, then the request's JSON) on the data folder's `events.sock`; the
 * omp plugin's `live_records` turns it into the trace, in the service. Only bulk the trace never
 * reads is left out (images, `agent_end`'s copy of the run's messages). What only the harness
 * knows is sent as it says it: `agent_end`'s `willContinue` (omp) and queued messages (pi), omp's
 * `retry_fallback_applied`, and a user message no `input` event came for (omp's print mode).
 *
 * - Before a tool runs (`tool_call`), it asks for the verdict: the payload carries the call under
 *   the keys IPC v2 reads for one (`hook_event_name: "PreToolUse"`, `tool_name`, `tool_use_id`,
 *   `tool_input`, `session_id`, `cwd`), and a `deny` blocks the call (`{block: true, reason}`).
 * - Events go one at a time, in the order pi emits them (one chain). Only two handlers wait: a
 *   call's, for its verdict (at most `call_deadline_ms`), and the shutdown's, to flush (within
 *   pi's 2 s); the others return at once, and an attempt of theirs that a held event loop failed
 *   is made again (omp holds it for seconds as it starts).
 * - Only the service is told anything (node has no `SO_PEERCRED`): it connects through the lock holder's own
 *   fd on the socket file it bound ({@link serviceSocket}); a socket put at the path by another process is
 *   `untrusted_service`, and the event goes to `rematch-hook` (below), as when no service answers.
 * - When no service answers, it starts one (`python -m rematch_trace.live.service --data DIR
 *   --quiet`, once) and hands the event to `rematch-hook` (`python -m
 *   rematch_trace.live.hook_entry omp --out DIR`, the payload on stdin), which judges a call by
 *   the service's own rules and captures the event in its process; its deny is the omp plugin's
 *   `hook_denial` line. Whatever fails is one line in `<data>/live/errors.log` (never the
 *   payload), and the harness goes on (fail open).
 *
 * `rematch hooks install --harness pi|omp` copies this file to the harness's extensions folder
 * and writes the `INSTALLED` line below (the data folder, the interpreter, the budgets).
 */

import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  appendFileSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, renameSync, statSync,
} from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

/** What `rematch hooks install` writes into this file. */
export interface Config {
  /** The data folder (absolute). */
  data: string;
  /** The Python interpreter that has rematch installed. */
  python: string;
  /** IPC v2 `adapter`: the harness the events are captured as, whose plugin translates them (`pi` or `omp`). */
  adapter: string;
  /** The harness, for the error log (`pi` or `omp`). */
  harness: string;
  /** How long any event may hold the harness, ms. */
  deadline_ms: number;
  /** How long a call waits for its verdict (a held call waits for a person), ms. */
  call_deadline_ms: number;
  /** The harness's version, found at load ({@link harnessVersion}); not written by install. */
  harness_version?: string | null;
}

// rematch hooks install replaces the next line; without it the extension does nothing.
const INSTALLED: Config | null = null;

/** IPC v2 bounds: a request's payload and a reply's, bytes. */
export const MAX_REQUEST_BYTES = 1 << 20;
export const MAX_REPLY_BYTES = 16 << 10;
/** Longest socket path used inside the data folder (`rematch_trace.live.paths.MAX_SOCKET_PATH`). */
const MAX_SOCKET_PATH = 100;
/** Names of the runtime folder tried in turn (`rematch_trace.live.paths.CANDIDATES`). */
const RUN_CANDIDATES = 8;
/** How long a call waits for a service it has just started, ms (the hook client's DEADLINE_MS). */
const START_WAIT_MS = 1500;
const POLL_MS = 10;
/** A call's hand-over to rematch-hook ends this long before its handler gives up, ms. */
const HANDOVER_MARGIN_MS = 100;
/** What an ordinary event's attempt (or its hand-over) may take, ms: nothing waits on it (its handler
 * returned), and a harness starting on a loaded machine (omp under bun) leaves the service, and
 * rematch-hook's interpreter, little CPU for seconds. */
const ORDINARY_MS = 5000;
/** An ordinary event's attempt this much past its budget found the harness's event loop held, ms. */
const HELD_MS = 500;
/** How many times an ordinary event is sent again after a held loop failed it. */
const HELD_RETRIES = 3;
/** What pi's shutdown leaves an extension, ms (the seed's 2 s budget). */
const SHUTDOWN_MS = 2000;
const ERROR_LOG_BYTES = 1 << 20;
const ERROR_MESSAGE_CHARS = 300;
/** The fallback hook's deny: one JSON line, at most this long. */
const MAX_DENY_LINE = 16 << 10;

/** An IPC v2 reply, checked as far as this extension acts on it. */
export interface Reply {
  request_id: string | null;
  decision: "no_override" | "deny";
  reason: string;
  explanation: string;
  incident_id: string | null;
  decision_source: string;
}

/** What became of one event: the verdict the harness is told (`block`), and why nothing answered. */
export interface Outcome {
  block: { block: true; reason: string } | null;
  error: string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Payload = { [key: string]: Json };

/** The service's private folder, as `rematch_trace.live.paths.run_dir` computes it. */
export function runDir(data: string, uid: number = process.getuid?.() ?? 0): string {
  const inside = join(data, "run");
  if (Buffer.byteLength(resolve(inside, "control.sock")) <= MAX_SOCKET_PATH) {
    return inside;
  }
  let real = resolve(data);
  try {
    real = realpathSync(data);
  } catch {
    // (a folder that is not there yet: its absolute path, as os.path.realpath gives it)
  }
  const base = process.env.XDG_RUNTIME_DIR || tmpdir();
  const stem = join(base, `rematch-${uid}-${createHash("sha256").update(real).digest("hex").slice(0, 16)}`);
  const names = [stem, ...Array.from({ length: RUN_CANDIDATES - 1 }, (_v, i) => `${stem}-${i + 1}`)];
  for (const name of names) {
    try {
      const st = lstatSync(name);
      if (st.isDirectory() && st.uid === uid) {
        return name;
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        return name;
      }
    }
  }
  return stem;
}

/** The running harness's version: the `version` of the package whose script this process runs
 * (`…/pi-coding-agent/dist/cli.js`: the nearest `package.json` above it naming a coding agent), or
 * `null`. Read once, from files: the harness's own modules are not imported (pi's and omp's differ). */
export function harnessVersion(script: string | undefined = process.argv[1]): string | null {
  if (!script) {
    return null;
  }
  try {
    let dir = dirname(realpathSync(script));
    for (let i = 0; i < 6; i++) {
      try {
        const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown; version?: unknown };
        if (typeof pkg.name === "string" && pkg.name.endsWith("coding-agent") && typeof pkg.version === "string"
          && /^[\x21-\x7e]{1,64}$/.test(pkg.version)) {
          return pkg.version;
        }
      } catch {
        // no package.json here: one folder up
      }
      const up = dirname(dir);
      if (up === dir) {
        break;
      }
      dir = up;
    }
  } catch {
    // (a script that is not a file)
  }
  return null;
}

/** A fresh id of `n` random bytes, as lowercase hex. */
function hex(n: number): string {
  return randomBytes(n).toString("hex");
}

/** The framed `hook_event` request carrying `payload`, or `null` past IPC v2's request bound. */
export function requestFrame(config: Config, payload: Payload, t: number, budgetMs: number,
  requestId: string = hex(12), deadline: number = t + budgetMs): Buffer | null {
  const request = {
    protocol_version: 2,
    request_id: requestId,
    request_kind: "hook_event",
    adapter: config.adapter,
    adapter_version: "1",
    received_at_ms: t,
    hard_deadline_ms: deadline,
    host_version: config.harness_version ?? "unknown",
    invocation_nonce: hex(16),
    host_payload: payload,
  };
  const body = Buffer.from(JSON.stringify(request), "utf8");
  if (body.length > MAX_REQUEST_BYTES) {
    return null;
  }
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

/** The reply's domains (`rematch_trace.live.ipc.messages._REPLY_SPEC`). */
const REPLY_FIELDS = ["protocol_version", "request_id", "decision", "reason", "explanation", "incident_id",
  "decision_source", "tool_class", "execution_observed"];
const DECISION_SOURCES = ["local_rules", "demo_provider", "model_provider", "approval", "service", "protocol_error",
  "fail_open"];
const TOOL_CLASSES = ["shell_exec", "file_read", "file_write", "file_edit", "network", "mcp", "subagent", "other",
  "unknown"];
const REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const REASON = /^[a-z0-9][a-z0-9_.:-]{0,63}$/;
const INCIDENT = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
const MAX_EXPLANATION = 1024;
const MAX_DEPTH = 32;
const MAX_EXACT_INT = 2 ** 53 - 1;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const JSON_STRING = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/;
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/;

/** One JSON value of `text` from `at`, as strict as the service's codec where a reply can tell: a key twice
 * in one object, a lone surrogate, a number with a fraction or exponent (no reply field is one) or an integer
 * past ±(2^53-1), nesting past 32: each throws. Returns the value and where it ended. */
function strictValue(text: string, at: number, depth: number): [unknown, number] {
  const skip = (i: number): number => {
    while (i < text.length && " \t\n\r".includes(text[i] as string)) {
      i += 1;
    }
    return i;
  };
  let i = skip(at);
  const c = text[i];
  if (c === "{" || c === "[") {
    if (depth > MAX_DEPTH) {
      throw new Error("too_deep");
    }
    const isObject = c === "{";
    const out: { [key: string]: unknown } = {};
    const items: unknown[] = [];
    const keys = new Set<string>();
    i = skip(i + 1);
    if (text[i] === (isObject ? "}" : "]")) {
      return [isObject ? out : items, i + 1];
    }
    for (;;) {
      if (isObject) {
        const key = JSON_STRING.exec(text.slice(i));
        if (key === null) {
          throw new Error("invalid_json");
        }
        const name = JSON.parse(key[0]) as string;
        if (keys.has(name)) {
          throw new Error("duplicate_key");
        }
        keys.add(name);
        i = skip(i + key[0].length);
        if (text[i] !== ":") {
          throw new Error("invalid_json");
        }
        const [value, end] = strictValue(text, i + 1, depth + 1);
        Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
        i = skip(end);
      } else {
        const [value, end] = strictValue(text, i, depth + 1);
        items.push(value);
        i = skip(end);
      }
      if (text[i] === ",") {
        i = skip(i + 1);
        continue;
      }
      if (text[i] === (isObject ? "}" : "]")) {
        return [isObject ? out : items, i + 1];
      }
      throw new Error("invalid_json");
    }
  }
  if (c === '"') {
    const lit = JSON_STRING.exec(text.slice(i));
    if (lit === null) {
      throw new Error("invalid_json");
    }
    const value = JSON.parse(lit[0]) as string;
    if (LONE_SURROGATE.test(value)) {
      throw new Error("invalid_utf8");
    }
    return [value, i + lit[0].length];
  }
  for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
    if (text.startsWith(word, i)) {
      return [value, i + word.length];
    }
  }
  const num = JSON_NUMBER.exec(text.slice(i));
  if (num === null || num[0] === "-") {
    throw new Error("invalid_json");
  }
  if (num[1] !== undefined || num[2] !== undefined || num[0].replace("-", "").length > 17
    || Math.abs(Number(num[0])) > MAX_EXACT_INT) {
    throw new Error("number_out_of_bounds");
  }
  return [Number(num[0]), i + num[0].length];
}

/** A reply's bytes as a {@link Reply}, checked as the Python hook client checks it (the codec's rules, every
 * field of `check_reply` and no other, and, unless it is a `protocol_error`, the request's own `requestId`);
 * throws `bad_reply: <code>` on anything this extension must not act on. */
export function decodeReply(body: Buffer, requestId: string | null = null): Reply {
  if (body.length > MAX_REPLY_BYTES) {
    throw new Error(`bad_reply: ${body.length} bytes`);
  }
  let obj: unknown;
  try {
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body);
    const [value, end] = strictValue(text, 0, 1);
    if (text.slice(end).trim() !== "" && /[^ \t\n\r]/.test(text.slice(end))) {
      throw new Error("invalid_json");
    }
    obj = value;
  } catch (err) {
    throw new Error(`bad_reply: ${err instanceof TypeError ? "invalid_utf8" : (err as Error).message}`);
  }
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) {
    throw new Error("bad_reply: not an object");
  }
  const rep = obj as { [key: string]: unknown };
  const keys = Object.keys(rep);
  if (keys.length !== REPLY_FIELDS.length || !keys.every((k) => REPLY_FIELDS.includes(k))) {
    throw new Error("bad_reply: not exactly the fields of an IPC v2 reply");
  }
  const word = (k: string, re: RegExp, nullable: boolean): boolean =>
    (nullable && rep[k] === null) || (typeof rep[k] === "string" && re.test(rep[k] as string));
  const oneOf = (k: string, values: string[]): boolean => typeof rep[k] === "string" && values.includes(rep[k] as string);
  if (rep.protocol_version !== 2 || !word("request_id", REQUEST_ID, true) || !word("reason", REASON, false)
    || typeof rep.explanation !== "string" || [...rep.explanation].length > MAX_EXPLANATION
    || !word("incident_id", INCIDENT, true) || !oneOf("decision_source", DECISION_SOURCES)
    || !oneOf("tool_class", TOOL_CLASSES) || rep.execution_observed !== "unknown"
    || (rep.decision !== "no_override" && rep.decision !== "deny")
    || (rep.request_id === null && rep.decision_source !== "protocol_error")) {
    throw new Error("bad_reply: not an IPC v2 reply");
  }
  if (requestId !== null && rep.decision_source !== "protocol_error" && rep.request_id !== requestId) {
    throw new Error("bad_reply: the reply of another request");
  }
  return rep as unknown as Reply;
}

/** Whether the service took the event: `recorded`, or a deny of its own (recorded first). */
export function taken(reply: Reply): boolean {
  return reply.reason === "recorded" || (reply.decision === "deny"
    && reply.decision_source !== "protocol_error" && reply.decision_source !== "fail_open");
}

/** The reason a blocked call gives the model: it starts `rematch: `, as the hook client's deny does. */
export function denyReason(reply: Reply): string {
  const explanation = reply.explanation || "denied by rematch's policy";
  const incident = reply.incident_id ? `, incident ${reply.incident_id.slice(0, 64)}` : "";
  return `rematch: ${explanation} (${reply.reason.slice(0, 64)}${incident})`;
}

/** The pids holding a `flock` on file `lock`, as the kernel lists them in `/proc/locks`
 * (`rematch_trace.live.service_identity.lock_holders`); none when either cannot be read. */
export function lockHolders(lock: string): number[] {
  let text: string;
  let dev: bigint;
  let ino: bigint;
  try {
    const st = statSync(lock, { bigint: true });
    [dev, ino] = [st.dev, st.ino];
    text = readFileSync("/proc/locks", "latin1");
  } catch {
    return [];
  }
  // glibc's encoding of st_dev (what os.major / os.minor undo); /proc/locks prints the kernel's major:minor.
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  const found: number[] = [];
  for (const line of text.split("\n")) {
    // "1: FLOCK  ADVISORY  WRITE 1234 fe:00:2179895 0 EOF" (a blocked waiter's "->" takes field 1)
    const fields = line.trim().split(/\s+/);
    const where = (fields[5] ?? "").split(":");
    if (fields[1] !== "FLOCK" || where.length !== 3 || !/^[0-9]+$/.test(fields[4] ?? "")
      || !where.every((part, i) => (i < 2 ? /^[0-9a-f]+$/i : /^[0-9]+$/).test(part))) {
      continue;
    }
    if (BigInt(`0x${where[0] as string}`) === major && BigInt(`0x${where[1] as string}`) === minor
      && BigInt(where[2] as string) === ino) {
      found.push(Number(fields[4]));
    }
  }
  return found;
}

/** Where the service's own socket file was found: the lock holder, its start time, and its fd on the file. */
export interface Anchor {
  pid: number;
  start: string;
  fd: string;
}

/** How to reach the running service of run folder `run` on its socket `name` (`events.sock`) without
 * `SO_PEERCRED` (node has none): the path `/proc/PID/fd/N` of the `O_PATH` fd the service holds on the socket
 * file it bound, PID being the holder of the flock on `run/serve.lock` (docs/threat-model.md). A connection
 * through that link reaches the socket file the service bound, whatever now lies at `run/name`; and the file
 * must still be at `run/name` (else another process answers there, as for the Python hook client).
 *
 * `cache` (the last anchor found) spares the scan of the service's fds while the same process (pid and start
 * time: no reused pid) still holds that fd on that path. Throws `no_service` (no lock holder: a socket there is
 * stale or not the service's, and a service started takes the path back), `untrusted_service: ...` or
 * `service_paused: ...`. */
export function serviceSocket(run: string, name: string, cache: Anchor | null = null): [string, Anchor] {
  const holders = lockHolders(join(run, "serve.lock"));
  if (holders.length === 0) {
    throw new Error("no_service");
  }
  let expected: string;
  try {
    expected = join(realpathSync(run), name);
  } catch {
    throw new Error("no_service");
  }
  const target = (pid: number, fd: string): boolean => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === expected;
    } catch {
      return false;
    }
  };
  for (const pid of holders) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    } catch {
      continue;
    }
    // After the command's ")": field 3 (the state) on; field 22 is the start time.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const start = rest[19] ?? "";
    let fd: string | undefined;
    if (cache !== null && cache.pid === pid && cache.start === start && target(pid, cache.fd)) {
      fd = cache.fd;
    } else {
      try {
        fd = readdirSync(`/proc/${pid}/fd`).find((n) => target(pid, n));
      } catch {
        fd = undefined;
      }
    }
    if (fd === undefined) {
      continue;
    }
    if (rest[0] === "T" || rest[0] === "t") {
      throw new Error(`service_paused: the service (pid ${pid}) is stopped`);
    }
    return [`/proc/${pid}/fd/${fd}`, { pid, start, fd }];
  }
  try {
    lstatSync(join(run, name));
  } catch {
    throw new Error("no_service"); // (a service starting: its lock taken, its socket not yet bound)
  }
  throw new Error(`untrusted_service: run/${name} is not the socket the service (pid ${holders.join(",")}) bound`);
}

/** Send one frame to the socket at `path`; the reply, or an error whose message says what failed.
 *
 * `verify`, once connected and before anything is sent: why the other end is not to be told (`null`: it is). */
export function exchange(path: string, frame: Buffer, deadline: number, requestId: string | null = null,
  verify: () => string | null = () => null): Promise<Reply> {
  return new Promise((done, fail) => {
    const sock = createConnection(path);
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (err: Error | null, reply?: Reply): void => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (err) {
        fail(err);
      } else {
        done(reply as Reply);
      }
    };
    const timer = setTimeout(() => finish(new Error("read_deadline")), Math.max(1, deadline - Date.now()));
    sock.on("connect", () => {
      const why = verify();
      if (why === null) {
        sock.write(frame);
      } else {
        finish(new Error(why));
      }
    });
    sock.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length >= 4) {
        const n = buf.readUInt32BE(0);
        if (n > MAX_REPLY_BYTES) {
          finish(new Error(`bad_reply: frame of ${n} bytes`));
        } else if (buf.length >= 4 + n) {
          try {
            finish(null, decodeReply(buf.subarray(4, 4 + n), requestId));
          } catch (err) {
            finish(err as Error);
          }
        }
      }
    });
    sock.on("error", (err: NodeJS.ErrnoException) => {
      const none = err.code === "ENOENT" || err.code === "ECONNREFUSED";
      finish(new Error(none ? "no_service" : `exchange_failed: ${err.code ?? err.name}`));
    });
    sock.on("close", () => finish(new Error("closed: no reply")));
  });
}

/** One line in `<data>/live/errors.log` (`rematch_trace.live.folder.log_error`'s format); never throws. */
export function logError(config: Config, message: string): void {
  try {
    const live = join(config.data, "live");
    mkdirSync(live, { recursive: true, mode: 0o700 });
    const path = join(live, "errors.log");
    try {
      if (statSync(path).size > ERROR_LOG_BYTES) {
        renameSync(path, `${path}.1`);
      }
    } catch {
      // (no log yet)
    }
    const line = message.split(/\s+/).join(" ").slice(0, ERROR_MESSAGE_CHARS);
    const stamp = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    appendFileSync(path, `${stamp} rematch_extension ${config.harness}: ${line}\n`, { mode: 0o600 });
  } catch {
    // logging is best effort: the harness goes on
  }
}

/** `rematch-hook`'s deny line (the omp plugin's `hook_denial`): `{"block": true, "reason": ...}`. */
export function parseDenyLine(out: string): Outcome["block"] {
  const line = out.slice(0, MAX_DENY_LINE).split("\n")[0]?.trim() ?? "";
  if (!line) {
    return null;
  }
  try {
    const obj: unknown = JSON.parse(line);
    if (typeof obj === "object" && obj !== null && (obj as { block?: unknown }).block === true) {
      const reason = (obj as { reason?: unknown }).reason;
      return { block: true, reason: typeof reason === "string" ? reason : "rematch: denied" };
    }
  } catch {
    // not a deny
  }
  return null;
}

/** The link to `rematch serve`: one chain of events, each with its budget. */
export class Link {
  private tail: Promise<unknown> = Promise.resolve();
  private started = false;
  private anchor: Anchor | null = null;

  constructor(private readonly config: Config) {}

  /** Queue `payload` behind the events before it; resolves with what the harness is told. */
  deliver(payload: Payload, budgetMs: number, isCall: boolean): Promise<Outcome> {
    const t = Date.now();
    const work = this.tail.then(() => this.send(payload, t, budgetMs, isCall));
    this.tail = work.catch(() => undefined);
    return work;
  }

  /** Wait for every queued event, at most `ms`. */
  async drain(ms: number): Promise<void> {
    await Promise.race([this.tail, new Promise((done) => setTimeout(done, ms).unref())]);
  }

  private async send(payload: Payload, t: number, budgetMs: number, isCall: boolean): Promise<Outcome> {
    // A call's budget runs from the event (pi waits on it). An ordinary event waits for nothing: each
    // attempt's budget runs from the attempt, so an event loop the harness held (omp under bun holds
    // it for seconds as it starts: the connection is then refused, or the reply read late) spends
    // none of it. Sent again, the event keeps its time `t`: the service applies it once.
    const deadline = t + budgetMs;
    let why = "unsendable: over IPC v2's 1 MiB request bound";
    const run = runDir(this.config.data);
    let waitUntil: number | null = isCall ? Math.min(deadline, Date.now() + START_WAIT_MS) : null;
    let held = 0;
    for (;;) {
      const began = Date.now();
      const until = isCall ? deadline : began + Math.max(budgetMs, ORDINARY_MS);
      const rid = hex(12);
      const frame = requestFrame(this.config, payload, t, budgetMs, rid, until);
      if (frame === null) {
        break;
      }
      let again = false;
      try {
        // Only the service is told: through its own fd on the socket file it bound, and only while it still
        // holds the lock once connected (its pid not reused since).
        const [path, anchor] = serviceSocket(run, "events.sock", this.anchor);
        this.anchor = anchor;
        const reply = await exchange(path, frame, until, rid, () => (lockHolders(join(run, "serve.lock"))
          .includes(anchor.pid) ? null : `untrusted_service: pid ${anchor.pid} no longer holds the service's lock`));
        if (taken(reply)) {
          return { block: reply.decision === "deny" ? { block: true, reason: denyReason(reply) } : null, error: "" };
        }
        if (reply.reason === "deadline_passed" && !isCall) {
          // The service queued it and will write it: handing it over too would capture it twice.
          logError(this.config, `${String(payload.hook_event_name)}: queued by the service past its deadline`);
          return { block: null, error: "deadline_passed" };
        }
        why = `not taken: the service answered ${reply.reason.slice(0, 64)}`;
        // (the service timed out reading it: the harness held the loop once connected; it took nothing)
        again = !isCall && reply.reason === "read_deadline";
      } catch (err) {
        why = (err as Error).message;
        if (why === "no_service") {
          this.startService();
          // The service may be starting: a call tries again within its budget, any other event for
          // a while from its first failure.
          waitUntil ??= Date.now() + START_WAIT_MS;
          if (Date.now() + POLL_MS < waitUntil) {
            await new Promise((done) => setTimeout(done, POLL_MS));
            continue;
          }
        }
        again = !isCall && (why === "no_service" || why === "read_deadline");
      }
      // An attempt that outlasted its budget by far found the loop held (its timers fired late):
      // an ordinary event tries again, a few times, before it is handed over.
      if (again && Date.now() - began > Math.max(budgetMs, ORDINARY_MS) + HELD_MS && held < HELD_RETRIES) {
        held += 1;
        waitUntil = Date.now() + START_WAIT_MS;
        continue;
      }
      break;
    }
    const name = String(payload.hook_event_name);
    if (why !== "no_service") {
      logError(this.config, `${name}: handed to rematch-hook: ${why}`);
    }
    // A call's hand-over ends before its handler stops waiting (budget + START_WAIT_MS from `t`): a
    // deny after pi ran the call would be recorded as a block that never happened.
    const left = isCall ? t + budgetMs + START_WAIT_MS - Date.now() - HANDOVER_MARGIN_MS : Math.max(budgetMs, ORDINARY_MS);
    if (left <= 0) {
      logError(this.config, `${name}: no time left to hand over (${why}); the call runs`);
      return { block: null, error: why };
    }
    return this.fallback(payload, t, left, `${name}: ${why}`);
  }

  /** Start `rematch serve` for the data folder, once, detached (it outlives the harness). */
  private startService(): void {
    if (this.started) {
      return;
    }
    this.started = true;
    try {
      const child = spawn(this.config.python, ["-m", "rematch_trace.live.service", "--data", this.config.data, "--quiet"],
        { detached: true, stdio: "ignore" });
      child.on("error", (err) => logError(this.config, `cannot start the service: ${err.message}`));
      child.unref();
    } catch (err) {
      logError(this.config, `cannot start the service: ${(err as Error).message}`);
    }
  }

  /** `rematch-hook omp --out DATA`, the payload on stdin: judged and captured in its own process.
   *
   * With the time the event was sent to the service at (`REMATCH_HOOK_T_MS`): should the service
   * have captured it after all, the two captures are one invocation, applied once. */
  private fallback(payload: Payload, t: number, budgetMs: number, why: string): Promise<Outcome> {
    return new Promise((done) => {
      let out = "";
      let child;
      try {
        child = spawn(this.config.python, ["-m", "rematch_trace.live.hook_entry", this.config.adapter, "--out",
          this.config.data], { stdio: ["pipe", "pipe", "ignore"], env: { ...process.env, REMATCH_HOOK_T_MS: String(t) } });
      } catch (err) {
        logError(this.config, `event lost (${why}): rematch-hook did not start: ${(err as Error).message}`);
        done({ block: null, error: why });
        return;
      }
      const timer = setTimeout(() => {
        logError(this.config, `event lost (${why}): rematch-hook outlived its budget`);
        child.kill("SIGKILL");
      }, budgetMs);
      child.stdout.on("data", (chunk: Buffer) => {
        if (out.length < MAX_DENY_LINE) {
          out += chunk.toString("utf8");
        }
      });
      child.on("error", (err) => logError(this.config, `event lost (${why}): ${err.message}`));
      child.on("close", () => {
        clearTimeout(timer);
        done({ block: parseDenyLine(out), error: why });
      });
      child.stdin.on("error", () => undefined);
      child.stdin.end(JSON.stringify(payload));
    });
  }
}

/** The harness's context as last read: pi makes an event's `ctx` stale once the session is torn down. */
export interface Seen {
  session_id: string;
  session_file: string | null;
  cwd: string;
  model: Json;
}

/** The fields every payload carries: which session, where, the harness's pid, and the event's name.
 *
 * Read from `ctx` when it still answers, else from `seen` (an `agent_end` handled after pi began its
 * shutdown, in print mode); `seen` is updated with what was read. `null` when neither knows a session.
 */
export function basePayload(name: string, ctx: ExtensionContext, seen: Seen | null): [Payload, Seen] | null {
  let now: Seen | null = seen;
  let idle: boolean | null = null;
  try {
    const model = ctx.model ? { provider: String(ctx.model.provider), id: String(ctx.model.id) } : null;
    now = { session_id: ctx.sessionManager.getSessionId(), session_file: ctx.sessionManager.getSessionFile() ?? null,
      cwd: ctx.cwd, model };
    idle = ctx.isIdle();
  } catch {
    // a stale ctx: what was seen last
  }
  if (now === null) {
    return null;
  }
  // harness_pid: this process runs inside the harness, so the service records it as the harness
  // (whose tree may not approve its own held calls), not its parent.
  return [{ hook_event_name: name, harness_pid: process.pid, idle, ...now }, now];
}

/** `value` as JSON data (what JSON.stringify would keep), for a payload. */
function json(value: unknown): Json {
  return JSON.parse(JSON.stringify(value ?? null)) as Json;
}

/** Wait for `work`, at most `ms`; `null` past it (the harness goes on, the event still queued). */
async function within<T>(work: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((done) => {
    timer = setTimeout(() => done(null), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** What pi may tell of an `agent_end` beyond its type: omp's `willContinue` (an automatic
 * continuation is already scheduled: a retry, an empty-stop retry). pi 0.73 has none. */
interface AgentEndMore {
  willContinue?: unknown;
}

/** The handler registration of omp events pi's types do not name (`retry_fallback_applied`). */
type OnAny = (name: string, handler: (event: { [key: string]: unknown }, ctx: ExtensionContext) => void) => void;

/** Register the handlers on `pi` with `config` (the default export uses the installed one); the
 * events go through `link` (a test's, to see what is sent). */
export function register(pi: ExtensionAPI, config: Config, link: Link = new Link(config)): Link {
  const version = config.harness_version ?? null;
  let seen: Seen | null = null;
  const payload = (name: string, ctx: ExtensionContext): Payload | null => {
    const got = basePayload(name, ctx, seen);
    if (got === null) {
      return null;
    }
    seen = got[1];
    return got[0];
  };
  // Events are queued in the order pi emits them and the handler returns at once: pi runs the
  // next agent event's handlers only when this one's are done, and it does not wait for them
  // before its shutdown (print mode emits session_shutdown while agent_end is still queued).
  const forward = (name: string, fields: Payload, ctx: ExtensionContext): Promise<Outcome> | null => {
    try {
      const base = payload(name, ctx);
      if (base === null) {
        logError(config, `${name}: no session known yet; event not sent`);
        return null;
      }
      const work = link.deliver({ ...base, harness_version: version, event: fields }, config.deadline_ms, false);
      work.catch((err: Error) => logError(config, `${name}: ${err.name}: ${err.message}`));
      return work;
    } catch (err) {
      logError(config, `${name}: ${(err as Error).name}: ${(err as Error).message}`);
      return null;
    }
  };
  // The agent loop as this extension has seen it: the shutdown waits (briefly) for its agent_end.
  let running = false;
  let loopEnded: (() => void) | null = null;
  pi.on("session_start", (event, ctx) => {
    forward("session_start", { reason: event.reason }, ctx);
  });
  // Inputs sent whose user message has not ended yet: pi emits `input` before the message, omp's
  // print mode emits none (its prompt comes as the user message only, which is then sent).
  let typed = 0;
  pi.on("input", (event, ctx) => {
    if (forward("input", { text: event.text, source: event.source, images: event.images?.length ?? 0 }, ctx)) {
      typed += 1;
    }
    return { action: "continue" as const };
  });
  pi.on("agent_start", (_event, ctx) => {
    running = true;
    forward("agent_start", {}, ctx);
  });
  pi.on("agent_end", (event, ctx) => {
    // The run's messages were each sent at their message_end: only the last one's stop is kept.
    const last = event.messages[event.messages.length - 1] as { stopReason?: unknown } | undefined;
    const stop = typeof last?.stopReason === "string" ? last.stopReason : null;
    // Whether the loop goes on by itself: omp says so (`willContinue`); pi has messages queued.
    const more = (event as AgentEndMore).willContinue;
    let pending: boolean | null = null;
    try {
      pending = ctx.hasPendingMessages();
    } catch {
      // a stale ctx: not known
    }
    forward("agent_end", { messages: event.messages.length, stop_reason: stop,
      will_continue: typeof more === "boolean" ? more : null, pending }, ctx);
    running = false;
    loopEnded?.();
  });
  pi.on("message_end", (event, ctx) => {
    const role = (event.message as { role?: unknown }).role;
    if (role === "assistant" || role === "toolResult") {
      forward("message_end", { message: json(event.message) }, ctx);
    } else if (role === "user") {
      if (typed > 0) {
        typed -= 1; // its `input` was sent
      } else {
        forward("message_end", { message: json(event.message) }, ctx);
      }
    }
    return undefined;
  });
  // omp only: auto-retry moved to a fallback model (the seed's retry-fallback `model_change`).
  (pi.on as unknown as OnAny)("retry_fallback_applied", (event, ctx) => {
    const str = (v: unknown): string | null => (typeof v === "string" ? v.slice(0, 256) : null);
    forward("retry_fallback_applied", { from: str(event.from), to: str(event.to), role: str(event.role) }, ctx);
  });
  pi.on("tool_call", async (event, ctx) => {
    try {
      const base = payload("PreToolUse", ctx);
      if (base === null) {
        logError(config, "tool_call: no session known yet; no verdict asked");
        return undefined;
      }
      const call: Payload = {
        ...base,
        harness_version: version,
        pi_event: "tool_call",
        tool_name: event.toolName,
        tool_use_id: event.toolCallId,
        tool_input: json(event.input),
      };
      const outcome = await within(link.deliver(call, config.call_deadline_ms, true),
        config.call_deadline_ms + START_WAIT_MS);
      if (outcome?.block) {
        return outcome.block;
      }
    } catch (err) {
      logError(config, `tool_call: ${(err as Error).name}: ${(err as Error).message}`);
    }
    return undefined;
  });
  pi.on("session_shutdown", async (event, ctx) => {
    const start = Date.now();
    if (running) {
      await within(new Promise<void>((done) => {
        loopEnded = done;
      }), SHUTDOWN_MS / 2);
    }
    forward("session_shutdown", { reason: event.reason }, ctx);
    await link.drain(Math.max(0, SHUTDOWN_MS - (Date.now() - start)));
  });
  return link;
}

/** pi's entry point: the handlers, when `rematch hooks install` configured this copy. */
export default function rematch(pi: ExtensionAPI): void {
  if (INSTALLED !== null) {
    register(pi, { ...INSTALLED, harness_version: harnessVersion() });
  }
}
