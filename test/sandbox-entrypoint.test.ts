/**
 * sandbox/homefs-entrypoint through real mounts, as a container runtime would drive it: SIGTERM stops the
 * agent first and the final seal is committed before the script exits (exit 143); an agent that exits by
 * itself passes its status through after the seal; `homefs-entrypoint stop` (the Kubernetes preStop hook)
 * does the same from outside; HOMEFS_AGENT_USER runs the agent unprivileged in a home it owns; the
 * capabilities sandbox/pod.yaml grants are enough (run under a setpriv bounding set of exactly those),
 * and without CAP_KILL the home is still sealed; usage errors are one line with exit 64. The store is read back with `homefs cat` after the exit.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, TestHome, homefsOk, run, sh, shOk } from './support/homefs-mount.js';
import { forceUnmount, isMounted } from './support/fuse-mount-helpers.js';

const ENTRYPOINT = fileURLToPath(new URL('../../sandbox/homefs-entrypoint', import.meta.url));
const POD = fileURLToPath(new URL('../../sandbox/pod.yaml', import.meta.url));
const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});

/** The environment a sandbox image gives the entrypoint, with `homefs` and `node` on PATH. */
function sandboxEnv(h: TestHome, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const d = h.hostDirs('host1');
  const runDir = path.join(h.root, 'run');
  mkdirSync(runDir, { recursive: true });
  return {
    ...process.env,
    PATH: `${path.dirname(BIN)}:${path.dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOMEFS_HOME: h.ref, HOMEFS_MOUNTPOINT: h.mountpoint(), HOMEFS_STORE: h.storeUrl, HOMEFS_RUN_DIR: runDir,
    HOMEFS_MOUNT_OPTS: `--state-dir ${d.state} --cache-dir ${d.cache}`, HOMEFS_AGENT_STOP_TIMEOUT: '20',
    ...extra,
  };
}

/** An agent that records where it runs, then works until SIGTERM, when it writes its last words. */
const AGENT = `echo "$HOME $PWD" > env.txt; trap 'echo stopped cleanly > last-words.txt; exit 0' TERM; echo started > started.txt; while :; do sleep 0.05; done`;

async function until(what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Entrypoint {
  exited: Promise<number | null>;
  pid: number;
  mnt: string;
  stderr: () => string;
}

/** Starts the entrypoint (under `prefix`, e.g. setpriv) and resolves once its agent runs in the home. */
async function startEntrypoint(h: TestHome, env: NodeJS.ProcessEnv, agent: string, prefix: string[] = []): Promise<Entrypoint> {
  const mnt = String(env.HOMEFS_MOUNTPOINT);
  const argv = [...prefix, ENTRYPOINT, 'bash', '-c', agent];
  const child = spawn(argv[0] ?? ENTRYPOINT, argv.slice(1), { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  h.mounts.add(mnt);
  await until('the agent to start in the mounted home', async () => {
    if (child.exitCode !== null) throw new Error(`entrypoint exited ${child.exitCode}: ${stderr}`);
    return (await sh(`test -f ${mnt}/started.txt`)).code === 0;
  });
  return { exited, pid: child.pid ?? 0, mnt, stderr: () => stderr };
}

async function sealed(h: TestHome, file: string): Promise<string> {
  return homefsOk(['cat', h.ref, file, '--store', h.storeUrl]);
}

test('SIGTERM: the agent stops first, the final seal commits its last writes, then the entrypoint exits 143', async () => {
  const h = new TestHome('acme', 'sbx-term');
  homes.push(h);
  const env = sandboxEnv(h);
  const e = await startEntrypoint(h, env, AGENT);
  try {
    process.kill(e.pid, 'SIGTERM');
    assert.equal(await e.exited, 143);
    // Read at once, with nothing left running: whatever the store holds now was sealed before the exit.
    assert.equal(isMounted(e.mnt), false, 'unmounted before exit');
    assert.equal(existsSync(path.join(h.hostDirs('host1').state, 'daemon.pid')), false, 'the daemon is gone');
    assert.equal(await sealed(h, 'last-words.txt'), 'stopped cleanly\n', 'written by the agent on SIGTERM, sealed after it');
    assert.equal(await sealed(h, 'env.txt'), `${e.mnt} ${e.mnt}\n`, 'HOME and the working directory are the mounted home');
    assert.equal(existsSync(path.join(String(env.HOMEFS_RUN_DIR), 'agent.pid')), false);
  } finally {
    forceUnmount(e.mnt);
  }
});

test('an agent that exits by itself: sealed, unmounted, its exit status passed through', async () => {
  const h = new TestHome('acme', 'sbx-exit');
  homes.push(h);
  const env = sandboxEnv(h);
  const e = await startEntrypoint(h, env, 'echo started > started.txt; sleep 0.2; echo done > result.txt; exit 3');
  try {
    assert.equal(await e.exited, 3);
    assert.equal(isMounted(e.mnt), false);
    assert.equal(await sealed(h, 'result.txt'), 'done\n');
  } finally {
    forceUnmount(e.mnt);
  }
});

test('preStop `homefs-entrypoint stop`: stops the agent and returns once sealed; the entrypoint then exits', async () => {
  const h = new TestHome('acme', 'sbx-prestop');
  homes.push(h);
  const env = sandboxEnv(h);
  const e = await startEntrypoint(h, env, AGENT);
  try {
    const stop = await run(ENTRYPOINT, ['stop'], { env });
    assert.equal(stop.code, 0, stop.stderr);
    assert.equal(isMounted(e.mnt), false, 'asleep when the hook returns');
    assert.equal(await sealed(h, 'last-words.txt'), 'stopped cleanly\n');
    assert.equal(await e.exited, 0, "the agent's own status (its TERM handler exits 0)");
  } finally {
    forceUnmount(e.mnt);
  }
});

test('the entrypoint does not exit while a `stop` still runs (as PID 1 its exit would kill the hook)', async () => {
  const h = new TestHome('acme', 'sbx-hookwait');
  homes.push(h);
  const env = sandboxEnv(h);
  const e = await startEntrypoint(h, env, AGENT);
  try {
    // A hook that is still at work: it holds what every running `stop` holds until it exits.
    const started = performance.now();
    const hook = spawn('flock', ['-s', path.join(String(env.HOMEFS_RUN_DIR), 'stop.lock'), 'sleep', '3'], { stdio: 'ignore' });
    const hookDone = once(hook, 'exit');
    await new Promise((r) => setTimeout(r, 200));
    process.kill(e.pid, 'SIGTERM');
    assert.equal(await e.exited, 143);
    const waited = performance.now() - started;
    await hookDone;
    assert.ok(waited >= 2900, `the entrypoint exited ${Math.round(waited)} ms after the hook began, before it ended (3 s)`);
    assert.equal(await sealed(h, 'last-words.txt'), 'stopped cleanly\n');
  } finally {
    forceUnmount(e.mnt);
  }
});

test('HOMEFS_AGENT_USER: the agent runs unprivileged in a home it owns', async () => {
  const h = new TestHome('acme', 'sbx-user');
  homes.push(h);
  const env = sandboxEnv(h, { HOMEFS_AGENT_USER: 'nobody' });
  const e = await startEntrypoint(h, env, 'id -u > uid.txt; mkdir -p work && echo mine > work/file; echo started > started.txt; exit 0');
  try {
    assert.equal(await e.exited, 0);
    const nobody = (await run('id', ['-u', 'nobody'])).stdout;
    assert.equal(await sealed(h, 'uid.txt'), nobody);
    assert.equal(await sealed(h, 'work/file'), 'mine\n');
  } finally {
    forceUnmount(e.mnt);
  }
});

/** The capabilities sandbox/pod.yaml adds (after dropping ALL), as a setpriv bounding set. */
function podCapabilities(): string[] {
  const m = /^\s+add: \[(.*)\]$/m.exec(readFileSync(POD, 'utf8'));
  assert.ok(m, 'pod.yaml adds capabilities');
  return (m[1] ?? '').split(',').map((c) => c.trim().replace(/"/g, '').toLowerCase());
}

test("the pod example's capabilities are enough: mount, agent as another user, SIGTERM, final seal", async () => {
  assert.match(readFileSync(POD, 'utf8'), /^\s+allowPrivilegeEscalation: false$/m, 'the pod sets no_new_privs, as the test does');
  const caps = podCapabilities();
  assert.deepEqual(caps, ['sys_admin', 'chown', 'setuid', 'setgid', 'kill']);
  const h = new TestHome('acme', 'sbx-caps');
  homes.push(h);
  const env = sandboxEnv(h, { HOMEFS_AGENT_USER: 'nobody' });
  const e = await startEntrypoint(h, env, AGENT, ['setpriv', '--no-new-privs', `--bounding-set=-all,${caps.map((c) => `+${c}`).join(',')}`]);
  try {
    process.kill(e.pid, 'SIGTERM');
    assert.equal(await e.exited, 143, e.stderr());
    assert.equal(await sealed(h, 'last-words.txt'), 'stopped cleanly\n');
  } finally {
    forceUnmount(e.mnt);
  }
});

test('without CAP_KILL the entrypoint says so and still seals the home before exiting', async () => {
  const h = new TestHome('acme', 'sbx-nokill');
  homes.push(h);
  const env = sandboxEnv(h, { HOMEFS_AGENT_USER: 'nobody' });
  const caps = podCapabilities().filter((c) => c !== 'kill');
  const e = await startEntrypoint(h, env, AGENT, ['setpriv', `--bounding-set=-all,${caps.map((c) => `+${c}`).join(',')}`]);
  const agent = Number(readFileSync(path.join(String(env.HOMEFS_RUN_DIR), 'agent.pid'), 'utf8'));
  try {
    await shOk(`echo kept > ${e.mnt}/kept.txt`);
    process.kill(e.pid, 'SIGTERM');
    assert.equal(await e.exited, 143);
    assert.match(e.stderr(), new RegExp(`cannot signal the agent \\(pid ${agent}\\): this container lacks CAP_KILL`));
    assert.equal(await sealed(h, 'kept.txt'), 'kept\n');
  } finally {
    try {
      process.kill(agent, 'SIGKILL');
    } catch {
      // already gone
    }
    forceUnmount(e.mnt);
  }
});

test('usage errors are one line and exit 64, before anything is mounted', async () => {
  const h = new TestHome('acme', 'sbx-usage');
  homes.push(h);
  const env = sandboxEnv(h);
  const noAgent = await run(ENTRYPOINT, [], { env });
  assert.equal(noAgent.code, 64);
  assert.equal(noAgent.stderr, 'homefs-entrypoint: no agent command given; usage: homefs-entrypoint AGENT [ARGS...] (or: homefs-entrypoint stop)\n');
  const { HOMEFS_HOME: _unused, ...noHome } = env;
  const r = await run(ENTRYPOINT, ['true'], { env: noHome });
  assert.equal(r.code, 64);
  assert.equal(r.stderr, 'homefs-entrypoint: HOMEFS_HOME is not set; set it to the home to mount, e.g. HOMEFS_HOME=acme/agent1\n');
  assert.equal(isMounted(String(env.HOMEFS_MOUNTPOINT)), false);
});
