/** The benchmark harness's own parsing (not a timing test). */
import { test } from 'node:test';
import assert from 'node:assert/strict';

const parse = await import(new URL('../../bench/parse.mjs', import.meta.url).href) as {
  parseTime(t: string): { wallMs: number; cpuMs: number; rssKB: number };
  parseStrace(t: string, fd?: number): { writes: number; bytes: number };
  median(xs: number[]): number;
};

test('parseTime reads /usr/bin/time -f "%e %U %S %M"', () => {
  assert.deepEqual(parse.parseTime('1.50 0.25 0.05 20480\n'), { wallMs: 1500, cpuMs: 300, rssKB: 20480 });
  assert.deepEqual(parse.parseTime('Command exited with non-zero status 1\n0.01 0.00 0.00 3000\n'), { wallMs: 10, cpuMs: 0, rssKB: 3000 });
  assert.throws(() => parse.parseTime('garbage'));
});

test('parseStrace counts writes on fd 1 by the serving process, not by pack-objects', () => {
  const log = [
    '100 execve("/usr/bin/git", ["git", "upload-pack", "/r"], 0x7ffc /* 20 vars */) = 0',
    '100 write(1, "00e6abcdef"..., 4096) = 4096',
    '100 write(2, "progress", 8)         = 8',
    '101 execve("/usr/lib/git-core/git", ["git", "pack-objects", "--revs"], 0x55 /* 20 vars */) = 0',
    '101 write(1, "PACK\\0\\0\\0\\2"..., 8192) = 8192',
    '100 writev(1, [{iov_base="0005", iov_len=4}, {iov_base="x", iov_len=1}], 2) = 5',
    '102 write(1, "abc", 3 <unfinished ...>',
    '100 sendmsg(1, {msg_name=NULL}, 0) = 10',
    '102 <... write resumed>)                = 3',
    '100 write(1, "0000", 4)                = -1 EPIPE (Broken pipe)',
    '100 +++ exited with 0 +++',
  ].join('\n');
  assert.deepEqual(parse.parseStrace(log), { writes: 5, bytes: 4096 + 5 + 10 + 3 });
  assert.deepEqual(parse.parseStrace(log, 2), { writes: 1, bytes: 8 });
});

test('median', () => {
  assert.equal(parse.median([3, 1, 2]), 2);
  assert.equal(parse.median([4, 1, 2, 3]), 2.5);
});
