/**
 * The few file-system calls Node.js does not offer, done in batches by one long-lived python3 process:
 * reading and writing extended attributes, setting times with nanosecond precision (`fs.utimes` goes
 * through a double and loses ~100 ns), creating FIFOs and device nodes. One process for a whole push or
 * pull keeps this at a few microseconds per file instead of a process spawn per file.
 *
 * Never follows symlinks. Requests and replies are JSON lines; a batch is one line each way. Used by
 * push/pull (a CLI process), never by a process serving a mount.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { UserError } from '../util/errors.js';

const SCRIPT = String.raw`
import sys, os, json, base64, errno
def getx(p):
    try:
        names = os.listxattr(p, follow_symlinks=False)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.ENOENT, errno.EPERM, errno.EACCES): return []  # EACCES: push names it unreadable
        raise
    out = []
    for n in sorted(names, key=lambda s: s.encode('utf-8', 'surrogateescape')):
        try:
            v = os.getxattr(p, n, follow_symlinks=False)
        except OSError as e:
            if e.errno in (errno.ENODATA, errno.ENOTSUP, errno.EACCES): continue
            raise
        out.append([n, base64.b64encode(v).decode('ascii')])
    return out
def setx(p, n, v):
    os.setxattr(p, n, base64.b64decode(v), follow_symlinks=False)
def utime(p, a, m):
    os.utime(p, ns=(int(a), int(m)), follow_symlinks=False)
def mkfifo(p, mode):
    os.mkfifo(p, mode)
def mknod(p, mode, kind, rdev):
    import stat
    os.mknod(p, mode | (stat.S_IFCHR if kind == 'chardev' else stat.S_IFBLK), rdev)
OPS = {'getx': getx, 'setx': setx, 'utime': utime, 'mkfifo': mkfifo, 'mknod': mknod}
for line in sys.stdin:
    req = json.loads(line)
    fn = OPS[req['op']]
    res = []
    for args in req['items']:
        try:
            res.append({'ok': fn(*args)})
        except OSError as e:
            res.append({'err': '%s: %s' % (os.strerror(e.errno or 0), args[0])})
    sys.stdout.write(json.dumps(res) + '\n')
    sys.stdout.flush()
`;

type Reply = { ok?: unknown; err?: string };
const BATCH = 512;

export class OsHelper {
  private readonly pending: Array<{ resolve: (r: Reply[]) => void; reject: (e: Error) => void }> = [];
  private failure: Error | null = null;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const p = this.pending.shift();
      if (p) p.resolve(JSON.parse(line) as Reply[]);
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const fail = (e: Error): void => {
      this.failure ??= e;
      for (const p of this.pending.splice(0)) p.reject(this.failure);
    };
    child.on('error', (e: NodeJS.ErrnoException) =>
      fail(e.code === 'ENOENT' ? new UserError('python3 is needed for xattrs, FIFOs and nanosecond times; install it (apt-get install python3)') : e),
    );
    child.stdin.on('error', (e) => fail(e)); // EPIPE when python3 is missing or died; reported via `failure`
    child.on('exit', (code) => fail(new Error(`file-system helper exited (${code}): ${stderr.trim().split('\n').pop() ?? ''}`)));
  }

  static start(): OsHelper {
    return new OsHelper(spawn('python3', ['-c', SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  private async batch(op: string, items: unknown[][]): Promise<Reply[]> {
    const out: Reply[] = [];
    for (let i = 0; i < items.length; i += BATCH) {
      if (this.failure) throw this.failure;
      const chunk = items.slice(i, i + BATCH);
      const reply = new Promise<Reply[]>((resolve, reject) => this.pending.push({ resolve, reject }));
      this.child.stdin.write(JSON.stringify({ op, items: chunk }) + '\n');
      out.push(...(await reply));
    }
    return out;
  }

  /** Runs `op` on every item; throws the first failure as a one-line error. */
  private async run(op: string, items: unknown[][]): Promise<unknown[]> {
    const replies = await this.batch(op, items);
    for (const r of replies) if (r.err !== undefined) throw new UserError(`${op} failed: ${r.err}`);
    return replies.map((r) => r.ok);
  }

  /** Extended attributes of each path (not following symlinks), sorted by name; [] when none. */
  async getXattrs(paths: string[]): Promise<Array<Array<[string, Buffer]>>> {
    const res = (await this.run('getx', paths.map((p) => [p]))) as Array<Array<[string, string]>>;
    return res.map((xs) => xs.map(([n, v]) => [n, Buffer.from(v, 'base64')] as [string, Buffer]));
  }

  async setXattrs(items: Array<{ path: string; name: string; value: Buffer }>): Promise<void> {
    await this.run('setx', items.map((x) => [x.path, x.name, x.value.toString('base64')]));
  }

  /** Sets atime and mtime in nanoseconds without following symlinks. */
  async utimes(items: Array<{ path: string; atimeNs: bigint; mtimeNs: bigint }>): Promise<void> {
    await this.run('utime', items.map((x) => [x.path, x.atimeNs.toString(), x.mtimeNs.toString()]));
  }

  async mkfifo(items: Array<{ path: string; mode: number }>): Promise<void> {
    await this.run('mkfifo', items.map((x) => [x.path, x.mode]));
  }

  async mknod(items: Array<{ path: string; mode: number; kind: 'chardev' | 'blockdev'; rdev: number }>): Promise<void> {
    await this.run('mknod', items.map((x) => [x.path, x.mode, x.kind, x.rdev]));
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.failure) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin.end();
    await exited;
  }
}
