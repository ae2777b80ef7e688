/**
 * rematch's plugin for opencode: each event rematch records, handed to rematch's hook client.
 *
 * Thin on purpose (docs/live-capture.md, "opencode"): it translates nothing. Each event becomes a
 * JSON payload on the stdin of the fast hook client (`<python> -S -I rematch_hook.py opencode
 * --out DATA`), which hands it to `rematch serve` (or captures it in its own process when none
 * answers); the opencode plugin's `live_records` turns it into the trace. What it sends:
 *
 * - `SessionStart`: a session opencode created or updated (its `info`: id, parent, directory,
 *   title, version, times);
 * - `UserMessage`: a prompt (`chat.message`: the message and its parts);
 * - `PreToolUse`: a call before it runs (`tool.execute.before`: `tool_name`, `tool_use_id` (the
 *   call id), `tool_input`); it waits for the verdict, and a deny throws, which opencode gives the
 *   model as the call's error;
 * - `AssistantMessage`: an assistant message once opencode finished it (its parts, as their last
 *   `message.part.updated` left them);
 * - `Stop`: the session went idle (its run ended); `SessionEnd`: opencode's process exits.
 *
 * Every payload also has `session_id`, `cwd` and `session` (the session's latest info). Events are
 * handed over in the order opencode gives them, each while opencode waits (`spawnSync`: its `run`
 * exits as soon as the session is idle, and an event still on its way would be lost); a call's
 * verdict is awaited beside opencode's loop. The client exits 0 whatever fails (its failures are
 * lines in `<data>/live/errors.log`, never the payload); a client that cannot be started, fails or
 * outlives its deadline is let go and said there by the plugin: opencode goes on (fail open).
 *
 * opencode loads this file from the `plugin` list of its config (`file://...`): `rematch hooks
 * install --harness opencode` copies it into the data folder with its `INSTALLED` line filled in
 * and adds it there. It imports only node's modules, so opencode installs nothing for it.
 */

import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

/** What `rematch hooks install` writes into this file. */
export interface Config {
  /** The Python interpreter that has rematch installed. */
  python: string;
  /** The fast hook client (`rematch_trace/live/rematch_hook.py`). */
  client: string;
  /** The data folder (absolute). */
  data: string;
  /** How long an ordinary event may take, ms (the client's IPC budget). */
  deadline_ms: number;
  /** How long a call waits for its verdict (a held call waits for a person), ms. */
  call_deadline_ms: number;
}

// rematch hooks install replaces the next line; without it the plugin does nothing.
const INSTALLED: Config | null = null;

/** A JSON object as opencode gives it (fields untrusted, read by the Python side). */
export type Obj = Record<string, unknown>;

/** An event of opencode's bus, as the `event` hook gets it. */
export interface BusEvent {
  type: string;
  properties: Obj;
}

/** The hooks this plugin gives opencode (the subset of opencode's plugin API it uses). */
export interface Hooks {
  event: (input: { event: BusEvent }) => Promise<void>;
  "chat.message": (input: { sessionID: string }, output: { message: Obj; parts: Obj[] }) => Promise<void>;
  "tool.execute.before": (input: { tool: string; sessionID: string; callID: string },
                          output: { args: unknown }) => Promise<void>;
}

/** Beyond its deadline, how long the client may run before it is let go, ms (its start, a capture). */
export const SLACK_MS = 10_000;
/** What rematch's deny starts with (the reason the model reads). */
export const DENY_PREFIX = "rematch: ";

/**
 * Runs the client once with `payload` on stdin; resolves its stdout (a deny line, or nothing). `wait`:
 * the client runs while opencode's event loop waits (`spawnSync`), so an event is handed over before
 * opencode can go on, and exit (its `run` exits as soon as the session is idle); a call's verdict
 * runs beside the loop (a held call may wait for a person).
 */
export type Runner = (payload: Obj, deadlineMs: number, wait: boolean) => Promise<string>;

/**
 * One line in `<data>/live/errors.log` (`rematch_trace.live.folder.log_error`'s format), for what the
 * client cannot say itself: that it did not run (the event lost, a call let through unjudged). Never
 * the payload; never throws.
 */
export function logError(conf: Pick<Config, "data">, message: string): void {
  try {
    const live = join(conf.data, "live");
    mkdirSync(live, { recursive: true, mode: 0o700 });
    const stamp = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    appendFileSync(join(live, "errors.log"), `${stamp} rematch_plugin opencode: ${message}\n`, { mode: 0o600 });
  } catch {
    // logging is best effort: opencode goes on
  }
}

/** The runner of the installed client: never rejects (a client that cannot run gives "", and is logged). */
export function clientRunner(conf: Config): Runner {
  const args = (deadlineMs: number): string[] => ["-S", "-I", conf.client, "opencode", "--out", conf.data,
                                                  `--deadline-ms=${deadlineMs}`];
  const failed = (payload: Obj, why: string): void => {
    const event = typeof payload.hook_event_name === "string" ? payload.hook_event_name : "?";
    const lost = event === "PreToolUse" ? "the call ran unjudged (fail open)" : "the event is lost";
    logError(conf, `the hook client did not finish (${why}) for ${event}: ${lost}`);
  };
  return (payload, deadlineMs, wait) => {
    if (wait) {
      const done = spawnSync(conf.python, args(deadlineMs), { input: JSON.stringify(payload), encoding: "utf8",
                                                              stdio: ["pipe", "pipe", "ignore"],
                                                              timeout: deadlineMs + SLACK_MS });
      if (done.error !== undefined || done.status !== 0) {
        failed(payload, done.error?.message ?? `exit ${String(done.status ?? done.signal)}`);
      }
      return Promise.resolve(typeof done.stdout === "string" ? done.stdout : "");
    }
    return new Promise((resolve) => {
      let out = "";
      let settled = false;
      const finish = (): void => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          resolve(out);
        }
      };
      const child = spawn(conf.python, args(deadlineMs), { stdio: ["pipe", "pipe", "ignore"] });
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        failed(payload, "past its deadline");
        finish();
      }, deadlineMs + SLACK_MS);
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        out += chunk;
      });
      child.on("error", (err: Error) => {
        failed(payload, err.message);
        finish();
      });
      child.on("close", (code: number | null) => {
        if (code !== 0 && !settled) {
          failed(payload, `exit ${String(code)}`);
        }
        finish();
      });
      child.stdin.on("error", () => undefined); // a client gone before reading: its exit says the rest
      child.stdin.end(JSON.stringify(payload));
    });
  };
}

/** The reason of a deny line the client printed (`{"decision": "deny", "reason": ...}`), else null. */
export function denial(out: string): string | null {
  const text = out.trim();
  if (!text) {
    return null;
  }
  try {
    const doc: unknown = JSON.parse(text);
    if (typeof doc === "object" && doc !== null && !Array.isArray(doc)) {
      const { decision, reason } = doc as Obj;
      if (decision === "deny") {
        return typeof reason === "string" && reason ? reason : `${DENY_PREFIX}denied`;
      }
    }
  } catch {
    return null; // not the client's deny: the call runs (fail open, as the client does)
  }
  return null;
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function obj(value: unknown): Obj | null {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Obj) : null;
}

/** The hooks, sending through `run` (the installed client's, or a test's), and what to do at exit. */
export function makeHooks(run: Runner, conf: Pick<Config, "deadline_ms" | "call_deadline_ms">,
                          cwd: string): Hooks & { exit: () => void } {
  const sessions = new Map<string, Obj>();
  const parts = new Map<string, Map<string, Obj>>(); // message id -> part id -> part
  const sent = new Set<string>(); // assistant messages already sent

  const send = (name: string, sessionID: string, fields: Obj, deadlineMs: number, wait = true): Promise<string> => {
    const session = sessions.get(sessionID) ?? { id: sessionID, directory: cwd };
    const payload = { ...fields, hook_event_name: name, session_id: sessionID,
                      cwd: str(session.directory) || cwd, session };
    return run(payload, deadlineMs, wait);
  };

  const event = async ({ event: ev }: { event: BusEvent }): Promise<void> => {
    const props = obj(ev.properties) ?? {};
    if (ev.type === "session.created" || ev.type === "session.updated") {
      const info = obj(props.info);
      const id = str(info?.id);
      if (info && id) {
        const known = sessions.has(id);
        sessions.set(id, info);
        if (!known) {
          await send("SessionStart", id, {}, conf.deadline_ms);
        }
      }
    } else if (ev.type === "message.part.updated") {
      const part = obj(props.part);
      const mid = str(part?.messageID);
      const pid = str(part?.id);
      if (part && mid && pid && !sent.has(mid)) {
        const mine = parts.get(mid) ?? new Map<string, Obj>();
        mine.set(pid, part);
        parts.set(mid, mine);
      }
    } else if (ev.type === "message.updated") {
      const info = obj(props.info);
      const mid = str(info?.id);
      const sid = str(info?.sessionID);
      const time = obj(info?.time);
      const finished = typeof time?.completed === "number" || (info?.error !== undefined && info.error !== null);
      if (info && mid && sid && info.role === "assistant" && finished && !sent.has(mid)) {
        sent.add(mid);
        const mine = [...(parts.get(mid)?.values() ?? [])].sort((a, b) => (str(a.id) < str(b.id) ? -1 : 1));
        parts.delete(mid);
        await send("AssistantMessage", sid, { message: info, parts: mine }, conf.deadline_ms);
      }
    } else if (ev.type === "session.idle") {
      const sid = str(props.sessionID);
      if (sid) {
        await send("Stop", sid, {}, conf.deadline_ms);
      }
    }
  };

  const chat = async (input: { sessionID: string }, output: { message: Obj; parts: Obj[] }): Promise<void> => {
    await send("UserMessage", input.sessionID, { message: output.message, parts: output.parts }, conf.deadline_ms);
  };

  const before = async (input: { tool: string; sessionID: string; callID: string },
                        output: { args: unknown }): Promise<void> => {
    const out = await send("PreToolUse", input.sessionID,
                           { tool_name: input.tool, tool_use_id: input.callID, tool_input: output.args },
                           conf.call_deadline_ms, false);
    const reason = denial(out);
    if (reason !== null) {
      throw new Error(reason);
    }
  };

  /** opencode's process is ending: each session it ran is ended (synchronously: nothing waits after). */
  const exit = (): void => {
    for (const sid of sessions.keys()) {
      void send("SessionEnd", sid, { reason: "exit" }, conf.deadline_ms);
    }
    sessions.clear();
  };

  return { event, "chat.message": chat, "tool.execute.before": before, exit };
}

/** opencode's plugin (its `id` and `server` form): the hooks, or none when not installed. */
export default {
  id: "rematch",
  server: async (input: { directory: string }): Promise<Partial<Hooks>> => {
    if (INSTALLED === null) {
      return {};
    }
    const { exit, ...hooks } = makeHooks(clientRunner(INSTALLED), INSTALLED, input.directory);
    process.once("exit", exit);
    return hooks;
  },
};
