/**
 * git's trace2 event format (GIT_TRACE2_EVENT, JSON lines) and normal
 * format (GIT_TRACE2), for what upload-pack reports.
 */
import { appendFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';

function target(v: string | undefined): ((line: string) => void) | undefined {
  if (!v || v === '0' || v.toLowerCase() === 'false') return undefined;
  if (v === '1' || v.toLowerCase() === 'true' || v === '2') return (l) => { try { writeSync(2, l); } catch { /* ignore */ } };
  if (/^\d+$/.test(v)) { const fd = Number(v); return (l) => { try { writeSync(fd, l); } catch { /* ignore */ } }; }
  if (v.startsWith('/')) return (l) => { try { appendFileSync(v, l); } catch { /* ignore */ } };
  return undefined;
}

export class Trace2 {
  private sidValue: string | undefined;
  private readonly parentSid: string | undefined;
  private readonly event?: (l: string) => void;
  private readonly normal?: (l: string) => void;
  private readonly start = process.hrtime.bigint();

  constructor(env: NodeJS.ProcessEnv = process.env, readonly version = '0') {
    this.parentSid = env.GIT_TRACE2_PARENT_SID;
    this.event = target(env.GIT_TRACE2_EVENT);
    this.normal = target(env.GIT_TRACE2);
    if (this.enabled) env.GIT_TRACE2_PARENT_SID = this.sid;
  }

  /**
   * This process's session id, made when first asked for: most requests
   * trace nothing and advertise no session id, and making one costs a date
   * string, two regular expressions and a uname() on every request.
   */
  get sid(): string {
    if (this.sidValue === undefined) {
      const own = `${new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, '')}-${process.pid.toString(16)}-${Math.floor(Math.random() * 0x10000).toString(16).padStart(4, '0')}`;
      this.sidValue = this.parentSid ? `${this.parentSid}/gitwire-${own}` : `gitwire-${own}-${hostname()}`;
    }
    return this.sidValue;
  }

  get enabled(): boolean { return this.event !== undefined || this.normal !== undefined; }

  private base(ev: string): Record<string, unknown> {
    return { event: ev, sid: this.sid, thread: 'main', time: new Date().toISOString() };
  }
  private elapsed(): number { return Number(process.hrtime.bigint() - this.start) / 1e9; }

  emit(ev: string, fields: Record<string, unknown>, normal?: string): void {
    this.event?.(`${JSON.stringify({ ...this.base(ev), ...fields })}\n`);
    if (normal !== undefined) this.normal?.(`${new Date().toISOString().slice(11, 26)} gitwire ${normal}\n`);
  }

  versionEv(): void { this.emit('version', { evt: '3', exe: this.version }, `version ${this.version}`); }
  startEv(argv: string[]): void { this.emit('start', { t_abs: this.elapsed(), argv: ['git', ...argv] }, `start git ${argv.join(' ')}`); }
  exitEv(code: number): void { this.emit('exit', { t_abs: this.elapsed(), code }, `exit elapsed:${this.elapsed().toFixed(6)} code:${code}`); }
  data(category: string, key: string, value: string | number): void {
    this.emit(typeof value === 'number' ? 'data' : 'data', { t_abs: this.elapsed(), t_rel: this.elapsed(), nesting: 1, category, key, value: String(value) }, `data ${category} ${key}:${value}`);
  }
  dataJson(category: string, key: string, value: unknown): void {
    this.emit('data_json', { t_abs: this.elapsed(), t_rel: this.elapsed(), nesting: 1, category, key, value }, `data_json ${category} ${key}:${JSON.stringify(value)}`);
  }
}
