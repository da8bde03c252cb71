import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { expandEnvPath } from '../remote/env-path.js';
import { hfHome } from '../remote/hub.js';
import { join, relative } from 'node:path';

/**
 * The cache huggingface_hub, @huggingface/hub, hf-hub and llama.cpp share:
 *   <root>/models--{org}--{name}/blobs/<etag>                 the file's bytes
 *   <root>/models--{org}--{name}/snapshots/<commit>/<path>    a relative symlink to the blob
 *   <root>/models--{org}--{name}/refs/<revision>              the commit the revision named
 *   <root>/.locks/models--{org}--{name}/<etag>.lock           the download's lock
 * Root: HF_HUB_CACHE (HUGGINGFACE_HUB_CACHE, its old name), else $HF_HOME/hub, else
 * $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub; `~` and `$VAR` expanded as
 * huggingface_hub expands them.
 */
export function hubCacheDir(): string {
  const named = process.env.HF_HUB_CACHE || process.env.HUGGINGFACE_HUB_CACHE;
  return named ? expandEnvPath(named) : join(hfHome(), 'hub');
}

const ETAG = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const COMMIT = /^[0-9a-f]{40}$/;

/** Whether `etag` can name a blob (a git sha1 or an LFS sha256): nothing else is ever a file name here. */
export function isBlobName(etag: string): boolean {
  return ETAG.test(etag);
}

export function isCommit(revision: string): boolean {
  return COMMIT.test(revision);
}

/** A path inside the repository, or a revision: segments that cannot leave the folder they are joined to. */
function checkedSegments(text: string, what: string): string[] {
  const parts = text.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\0') || p.includes('\\'))) {
    throw new TypeError(`${what} '${text}' has an empty, '.' or '..' part, or a NUL or backslash`);
  }
  return parts;
}

/**
 * The folder `segments` below `root`, made where missing; a part that exists as anything but a
 * directory (a symlink planted to lead elsewhere among them) is refused: nothing written here
 * lands outside the cache.
 */
function folderInside(root: string, segments: readonly string[]): string {
  mkdirSync(root, { recursive: true });
  let at = root;
  for (const segment of segments) {
    at = join(at, segment);
    let stat = lstatSync(at, { throwIfNoEntry: false });
    if (stat === undefined) {
      try {
        mkdirSync(at);
      } catch (error) {
        // Made meanwhile by another thread or process (or Python): look at what it is.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      stat = lstatSync(at);
    }
    if (!stat.isDirectory()) throw Object.assign(new Error(`'${at}' is in the way in the model cache: not a directory (a symlink?)`), { code: 'ENOTDIR', path: at });
  }
  return at;
}

/** One repository's folder in the cache. */
export class RepoCache {
  readonly folder: string;
  private readonly name: string;

  constructor(
    readonly root: string,
    readonly repo: string,
  ) {
    const [org, model, ...rest] = repo.split('/');
    if (org === undefined || model === undefined || rest.length > 0) throw new TypeError(`'${repo}' is not ORG/NAME`);
    checkedSegments(repo, 'repository');
    this.name = `models--${org}--${model}`;
    this.folder = join(root, this.name);
  }

  blobPath(etag: string): string {
    if (!isBlobName(etag)) throw new TypeError(`'${etag}' is not a blob name (a sha1 or sha256)`);
    return join(this.folder, 'blobs', etag);
  }

  /** The commit `revision` names: itself when it is a commit hash, else what refs/ says. */
  commitOf(revision: string): string | undefined {
    if (isCommit(revision)) return revision;
    const ref = join(this.folder, 'refs', ...checkedSegments(revision, 'revision'));
    try {
      const commit = readFileSync(ref, 'utf8').trim();
      return isCommit(commit) ? commit : undefined;
    } catch {
      return undefined;
    }
  }

  /** The snapshot path of `path` at `commit` (a link to its blob). */
  snapshotPath(commit: string, path: string): string {
    if (!isCommit(commit)) throw new TypeError(`'${commit}' is not a commit hash`);
    return join(this.folder, 'snapshots', commit, ...checkedSegments(path, 'path'));
  }

  /**
   * The cached file `path` at `revision`, with no network: its snapshot path, if its blob is
   * there. In a repository folder with no refs at all (@huggingface/hub writes none, and names
   * snapshots by the file's last commit), the newest snapshot that has the file.
   */
  find(revision: string, path: string): { path: string; commit: string } | undefined {
    const commit = this.commitOf(revision) ?? (this.withoutRefs(revision) ? this.newestSnapshotWith(path) : undefined);
    if (commit === undefined) return undefined;
    const snapshot = this.snapshotPath(commit, path);
    return existsSync(snapshot) && statSync(snapshot).isFile() ? { path: snapshot, commit } : undefined;
  }

  /** A branch or tag name in a repository folder with no refs at all (written by a tool that writes none). */
  private withoutRefs(revision: string): boolean {
    return !isCommit(revision) && !existsSync(join(this.folder, 'refs'));
  }

  /** The commits with a snapshot folder. */
  snapshotCommits(): string[] {
    const snapshots = join(this.folder, 'snapshots');
    return existsSync(snapshots) ? readdirSync(snapshots).filter(isCommit) : [];
  }

  private newestSnapshotWith(path: string): string | undefined {
    const candidates = this.snapshotCommits()
      .filter((commit) => existsSync(this.snapshotPath(commit, path)))
      .map((commit) => ({ commit, at: lstatSync(this.snapshotPath(commit, path)).mtimeMs }));
    return candidates.sort((a, b) => b.at - a.at)[0]?.commit;
  }

  /**
   * The cached files `revision` names, with no network: its snapshot's; in a repository folder
   * with no refs (as @huggingface/hub leaves it), every snapshot's.
   */
  cachedFiles(revision: string): string[] {
    if (this.commitOf(revision) !== undefined || !this.withoutRefs(revision)) return this.snapshotFiles(revision);
    return [...new Set(this.snapshotCommits().flatMap((commit) => this.snapshotFiles(commit)))].sort();
  }

  /** The files of the snapshot `revision` names (paths inside the repository), with no network. */
  snapshotFiles(revision: string): string[] {
    const commit = this.commitOf(revision);
    if (commit === undefined) return [];
    const base = join(this.folder, 'snapshots', commit);
    const out: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else out.push(relative(base, full).split('\\').join('/'));
      }
    };
    if (existsSync(base)) walk(base);
    return out.sort();
  }

  /** The folder blobs go in, made (and checked) where missing. */
  blobsFolder(): string {
    return folderInside(this.root, [this.name, 'blobs']);
  }

  /** The lock file of a blob's download. */
  lockPath(etag: string): string {
    if (!isBlobName(etag)) throw new TypeError(`'${etag}' is not a blob name`);
    return join(folderInside(this.root, ['.locks', this.name]), `${etag}.lock`);
  }

  /** Links snapshots/<commit>/<path> to the blob (relative, as huggingface_hub links it). */
  link(commit: string, path: string, etag: string): string {
    const segments = checkedSegments(path, 'path');
    if (!isCommit(commit)) throw new TypeError(`'${commit}' is not a commit hash`);
    const folder = folderInside(this.root, [this.name, 'snapshots', commit, ...segments.slice(0, -1)]);
    const target = join(folder, segments.at(-1)!);
    const relativeBlob = relative(folder, this.blobPath(etag));
    const existing = lstatSync(target, { throwIfNoEntry: false });
    if (existing?.isSymbolicLink() && readlinkSync(target) === relativeBlob) return target;
    if (existing !== undefined && !existing.isSymbolicLink() && !existing.isFile()) throw Object.assign(new Error(`'${target}' is in the way in the model cache`), { code: 'EEXIST' });
    // A new link beside it, renamed over: never a moment without one.
    const temporary = `${target}.${uniqueSuffix()}.link`;
    symlinkSync(relativeBlob, temporary);
    renameSync(temporary, target);
    return target;
  }

  /** Records that `revision` names `commit` (refs/<revision>), unless it is the commit itself. */
  writeRef(revision: string, commit: string): void {
    if (isCommit(revision)) return;
    const segments = checkedSegments(revision, 'revision');
    const folder = folderInside(this.root, [this.name, 'refs', ...segments.slice(0, -1)]);
    const ref = join(folder, segments.at(-1)!);
    if (this.commitOf(revision) === commit) return;
    const temporary = `${ref}.${uniqueSuffix()}.tmp`;
    writeFileSync(temporary, commit);
    renameSync(temporary, ref);
  }
}

/** A name no other process or thread uses at once (threads share the pid). */
function uniqueSuffix(): string {
  return `${process.pid}.${threadId}.${randomBytes(6).toString('hex')}`;
}

/** What the cache holds: repositories, their files (in any snapshot) and sizes. */
export interface CachedRepo {
  repo: string;
  files: Array<{ path: string; revision: string; commit: string; bytes: number }>;
  /** Bytes of the blobs (each counted once, however many snapshots link it). */
  bytes: number;
}

export function listCache(root = hubCacheDir()): CachedRepo[] {
  if (!existsSync(root)) return [];
  const repos: CachedRepo[] = [];
  for (const entry of readdirSync(root).sort()) {
    const m = /^models--([^-][^/]*?)--(.+)$/.exec(entry);
    if (m === null) continue;
    const cache = new RepoCache(root, `${m[1]}/${m[2]}`);
    const refs = new Map<string, string>();
    const refsDir = join(cache.folder, 'refs');
    if (existsSync(refsDir)) for (const name of readdirSync(refsDir)) refs.set(readFileSafe(join(refsDir, name)), name);
    const files: CachedRepo['files'] = [];
    for (const commit of cache.snapshotCommits()) {
      for (const path of cache.snapshotFiles(commit)) {
        const size = statSync(cache.snapshotPath(commit, path), { throwIfNoEntry: false })?.size ?? 0;
        files.push({ path, revision: refs.get(commit) ?? commit, commit, bytes: size });
      }
    }
    const blobs = join(cache.folder, 'blobs');
    const bytes = existsSync(blobs) ? readdirSync(blobs).filter(isBlobName).reduce((n, b) => n + statSync(join(blobs, b)).size, 0) : 0;
    repos.push({ repo: cache.repo, files, bytes });
  }
  return repos;
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

