/**
 * The run's context handed to every scenario: sizes for --quick or full, the work directory, logging,
 * and the inputs several scenarios share (the generated agent home, its homefs store, restic repository
 * and tar archive), built once per run and reused.
 */
import { mkdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { agentHome, type HomeManifest } from './agenthome.js';
import { homefsPush, restic } from './peers.js';
import { bash, q } from './sh.js';

export interface Sizes {
  /** Agent home scale (1 ≈ 1 GiB, 26k files). */
  scale: number;
  rounds: number;
  /** Seal scaling: files in the 1× home (4× and 16× follow). */
  sealBaseFiles: number;
  /** Bytes written for the "1 GiB change" seal. */
  sealBigBytes: number;
  /** Agent home scale for each of the 10 dedup homes. */
  dedupScale: number;
  /** Sequential write/read size for the FUSE cost table. */
  seqBytes: number;
  /** Files created, stat'ed and deleted by the metadata workload. */
  metaFiles: number;
  /** Files in the git repository cloned and `git status`ed. */
  gitFiles: number;
  /** sqlite transactions (each a fsync). */
  sqliteTx: number;
}

export const QUICK: Sizes = { scale: 1, rounds: 2, sealBaseFiles: 6_250, sealBigBytes: 256 << 20, dedupScale: 0.1, seqBytes: 256 << 20,
  metaFiles: 2_000, gitFiles: 5_000, sqliteTx: 100 };
export const FULL: Sizes = { scale: 8, rounds: 3, sealBaseFiles: 25_000, sealBigBytes: 1 << 30, dedupScale: 1, seqBytes: 1 << 30,
  metaFiles: 10_000, gitFiles: 20_000, sqliteTx: 1_000 };

export interface PushedAgent {
  root: string;
  manifest: HomeManifest;
  store: string;
  ref: string;
  resticRepo: string;
  tarFile: string;
}

export class Ctx {
  private pushed?: PushedAgent;

  constructor(
    readonly repo: string,
    readonly work: string,
    readonly quick: boolean,
    readonly sizes: Sizes,
  ) {}

  log(msg: string): void {
    process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
  }

  /** Cached inputs (generated homes, archives) live here across runs. */
  get inputs(): string {
    const d = join(this.work, 'inputs');
    mkdirSync(d, { recursive: true });
    return d;
  }

  /** A fresh, empty scratch directory for one scenario step. */
  async fresh(name: string): Promise<string> {
    const d = join(this.work, 'run', name);
    await bash(`rm -rf ${q(d)} && mkdir -p ${q(d)}`);
    return d;
  }

  async agent(): Promise<{ root: string; manifest: HomeManifest }> {
    const root = join(this.inputs, `agent-s${this.sizes.scale}`);
    if (!existsSync(`${root}.manifest.json`)) this.log(`generating agent home (scale ${this.sizes.scale}) in ${root}`);
    return { root, manifest: await agentHome(root, this.sizes.scale, 'agent0') };
  }

  /** Records the store, restic repository and tar archive holding the agent home (from firstsync). */
  setPushed(p: PushedAgent): void {
    this.pushed = p;
  }

  /** The agent home pushed to a homefs store, backed up with restic and archived with tar (untimed if built here). */
  async pushedAgent(): Promise<PushedAgent> {
    if (this.pushed) return this.pushed;
    const { root, manifest } = await this.agent();
    const base = await this.fresh('agent-stores');
    const p: PushedAgent = { root, manifest, store: join(base, 'store'), ref: 'bench/agent', resticRepo: join(base, 'restic'), tarFile: join(base, 'home.tar') };
    this.log('pushing the agent home to homefs, restic and tar (setup, untimed)');
    await homefsPush(root, p.ref, p.store);
    await restic(p.resticRepo, ['init']);
    await restic(p.resticRepo, ['backup', '--host', 'a', '.'], { cwd: root });
    await bash(`tar -C ${q(root)} -cf ${q(p.tarFile)} .`);
    this.pushed = p;
    return p;
  }
}
