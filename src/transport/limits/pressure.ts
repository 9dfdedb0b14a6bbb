/**
 * Is the machine saturated? Two signals, sampled once a second:
 *
 * - this process's event-loop delay (perf_hooks monitorEventLoopDelay):
 *   the 99th percentile over the last second, above `delayMs`;
 * - on Linux, CPU pressure (PSI): `some avg10` of the process's cgroup
 *   (`/sys/fs/cgroup/<cgroup>/cpu.pressure`, cgroup v2), else of the whole
 *   machine (`/proc/pressure/cpu`), above `cpuPressure` percent. Where
 *   neither file is readable (not Linux, PSI off) this signal is absent.
 *
 * Either one above its threshold is "saturated". The state changes only at
 * a sample, so a request sees one answer for the whole second.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';

export interface SaturationOptions {
  /** event-loop delay p99 in ms above which the server is saturated (0: not looked at) */
  delayMs?: number;
  /** CPU pressure (PSI `some avg10`, percent) above which the server is saturated (0: not looked at) */
  cpuPressure?: number;
  /** ms between samples (default 1000) */
  intervalMs?: number;
  /** where the pressure is read (default: found as above); for tests */
  pressureFile?: string;
}

/** The `some avg10` figure of a PSI file's text, or undefined. */
export function parsePressure(text: string): number | undefined {
  const m = /^some\s.*\bavg10=(\d+(?:\.\d+)?)/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** This process's cgroup v2 cpu.pressure, else the machine's, else undefined. */
export function findPressureFile(): string | undefined {
  const candidates: string[] = [];
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'));
    if (line) candidates.push(`/sys/fs/cgroup${line.slice(3).replace(/\/$/, '')}/cpu.pressure`);
  } catch { /* not Linux */ }
  candidates.push('/sys/fs/cgroup/cpu.pressure', '/proc/pressure/cpu');
  for (const f of candidates) {
    try { if (parsePressure(readFileSync(f, 'utf8')) !== undefined) return f; } catch { /* not readable */ }
  }
  return undefined;
}

export class Saturation {
  /** the last sample's figures */
  delayP99Ms = 0;
  cpuPressure: number | undefined;
  private state = false;
  private readonly hist: IntervalHistogram | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly file: string | undefined;

  constructor(readonly opts: SaturationOptions = {}) {
    const { delayMs = 0, cpuPressure = 0 } = opts;
    if (delayMs > 0) {
      this.hist = monitorEventLoopDelay({ resolution: 10 });
      this.hist.enable();
    }
    if (cpuPressure > 0) this.file = opts.pressureFile ?? findPressureFile();
    if (this.hist || this.file) {
      this.timer = setInterval(() => { void this.sample(); }, opts.intervalMs ?? 1000);
      this.timer.unref();
    }
  }

  /** true while the last sample was over a threshold */
  get saturated(): boolean { return this.state; }

  /** whether CPU pressure can be read here */
  get pressureReadable(): boolean { return this.file !== undefined; }

  async sample(): Promise<boolean> {
    const { delayMs = 0, cpuPressure = 0 } = this.opts;
    let over = false;
    if (this.hist) {
      this.delayP99Ms = this.hist.percentile(99) / 1e6;
      this.hist.reset();
      if (this.delayP99Ms > delayMs) over = true;
    }
    if (this.file) {
      try { this.cpuPressure = parsePressure(await readFile(this.file, 'utf8')); } catch { this.cpuPressure = undefined; }
      if (this.cpuPressure !== undefined && this.cpuPressure > cpuPressure) over = true;
    }
    this.state = over;
    return over;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.hist?.disable();
  }
}
