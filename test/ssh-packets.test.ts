/**
 * src/transport/ssh/packets.ts: ssh2's ciphers get packets cut from slabs,
 * with padding from a pool, only where the stock layout is reproduced.
 *
 * Against the real OpenSSH client, for every cipher and MAC family ssh2
 * offers (chacha20-poly1305, AES-GCM, AES-CTR with each HMAC, plain and
 * EtM): the adoption takes place, and 3 MiB of random bytes sent back
 * through the adopted cipher arrive intact (OpenSSH checks every packet's
 * MAC or tag and its padding length, and drops the connection on a bad one).
 * A rekey in the middle of the transfer gets the new cipher adopted too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { adoptPackets, adoptedPackets, learnLayout, releaseSlabs, slabsOf } from '../src/transport/ssh/packets.js';
import { loadHostKey } from '../src/transport/ssh/keys.js';
import { sshKit, sshArgs, writeKnownHosts } from './helpers/ssh.js';
import { gitEnv } from './helpers/git.js';

test('learnLayout: finds ssh2\'s layouts, and refuses a layout it cannot reproduce', () => {
  const stockLike = (block: number, aligned: number, mac: number) => (p: number) => {
    let len = 5 + p;
    let pad = block - ((len - aligned) & (block - 1));
    if (pad < 4) pad += block;
    len += pad;
    const b = Buffer.alloc(len + mac);
    b.writeUInt32BE(len - 4, 0);
    b[4] = pad;
    return b;
  };
  assert.deepEqual(learnLayout(stockLike(8, 4, 16)), { block: 8, aligned: 4, mac: 16 });
  assert.deepEqual(learnLayout(stockLike(16, 0, 32)), { block: 16, aligned: 0, mac: 32 });
  assert.deepEqual(learnLayout(stockLike(16, 4, 16)), { block: 16, aligned: 4, mac: 16 });
  // at least 8 bytes of padding (a rule ssh2 does not have): no layout fits, ssh2's stays
  const other = (p: number) => { const len = 5 + p; let pad = 16 - (len & 15); if (pad < 8) pad += 16; const b = Buffer.alloc(len + pad); b.writeUInt32BE(len + pad - 4, 0); b[4] = pad; return b; };
  assert.equal(learnLayout(other), undefined);
  // a MAC whose length depends on the payload
  assert.equal(learnLayout((p) => { const b = stockLike(16, 0, 0)(p); return Buffer.concat([b, Buffer.alloc(p % 3)]); }), undefined);
});

test('a connection cuts data packets from its own slab, and holds none once released (idle)', () => {
  const stock = (p: number) => { let len = 5 + p; let pad = 16 - ((len - 4) & 15); if (pad < 4) pad += 16; len += pad; const b = Buffer.alloc(len + 16); b.writeUInt32BE(len - 4, 0); b[4] = pad; return b; };
  const a = { _protocol: { _cipher: { allocPacket: stock } as { allocPacket: (n: number) => Buffer } } };
  const b = { _protocol: { _cipher: { allocPacket: stock } as { allocPacket: (n: number) => Buffer } } };
  assert.ok(adoptPackets(a) && adoptPackets(b));
  const a1 = a._protocol._cipher.allocPacket(2000), a2 = a._protocol._cipher.allocPacket(2000), b1 = b._protocol._cipher.allocPacket(2000);
  assert.deepEqual([a1.length, a1[4]], [stock(2000).length, stock(2000)[4]]);
  assert.equal(a1.buffer, a2.buffer, 'one slab for a connection');
  assert.notEqual(a1.buffer, b1.buffer, 'another connection has its own');
  // small packets (keepalives) take no slab
  assert.notEqual(a._protocol._cipher.allocPacket(10).buffer, a1.buffer);
  releaseSlabs(a);
  assert.notEqual(a._protocol._cipher.allocPacket(2000).buffer, a1.buffer, 'after release, a new slab');
});

test('a full slab is used again once every packet cut from it was written; never while one is pending, nor after release', () => {
  const stock = (p: number) => { let len = 5 + p; let pad = 16 - ((len - 4) & 15); if (pad < 4) pad += 16; len += pad; const b = Buffer.alloc(len + 16); b.writeUInt32BE(len - 4, 0); b[4] = pad; return b; };
  const c = { _protocol: { _cipher: { allocPacket: stock } as { allocPacket: (n: number) => Buffer } } };
  assert.ok(adoptPackets(c) && adoptedPackets(c));
  const slabs = slabsOf(c)!;
  const alloc = () => c._protocol._cipher.allocPacket(32_741);
  // a 256 KiB slab holds seven such packets
  const first = Array.from({ length: 7 }, alloc);
  assert.ok(first.every((b) => b.buffer === first[0]!.buffer));
  const second = [alloc()];
  assert.notEqual(second[0]!.buffer, first[0]!.buffer, 'the eighth opens a new slab');
  // six of the first slab's packets are written; one is still pending (queued by ssh2 in a key exchange)
  for (const b of first.slice(0, 6)) slabs.written(slabs.owner(b)!);
  for (let i = 0; i < 6; i++) second.push(alloc());
  assert.ok(second.every((b) => b.buffer === second[0]!.buffer));
  const third = [alloc()];
  assert.notEqual(third[0]!.buffer, first[0]!.buffer, 'a slab with a packet pending is not used again');
  assert.notEqual(third[0]!.buffer, second[0]!.buffer);
  slabs.written(slabs.owner(first[6]!)!);
  // the first slab is full and all written: the next one it needs is that one
  for (let i = 0; i < 6; i++) third.push(alloc());
  const fourth = alloc();
  assert.equal(fourth.buffer, first[0]!.buffer, 'the first slab, all written, is used again');
  assert.deepEqual([fourth.length, fourth[4]], [stock(32_741).length, stock(32_741)[4]]);
  assert.deepEqual(slabs.stats, { made: 3, reused: 1 });
  // a packet from elsewhere is not the connection's
  assert.equal(slabs.owner(Buffer.alloc(32_768)), undefined);
  // released (idle): a slab whose packets are written afterwards does not come back
  releaseSlabs(c);
  for (const b of second) slabs.written(slabs.owner(b)!);
  for (let i = 0; i < 8; i++) assert.notEqual(alloc().buffer, second[0]!.buffer);
  assert.deepEqual(slabs.stats, { made: 5, reused: 1 }, 'after release, new slabs');
});

const CASES: Array<[string, string[]]> = [
  ['chacha20-poly1305', ['-c', 'chacha20-poly1305@openssh.com']],
  ['aes128-gcm', ['-c', 'aes128-gcm@openssh.com']],
  ['aes256-gcm', ['-c', 'aes256-gcm@openssh.com']],
  ['aes128-ctr + hmac-sha2-256', ['-c', 'aes128-ctr', '-m', 'hmac-sha2-256']],
  ['aes256-ctr + hmac-sha2-512-etm', ['-c', 'aes256-ctr', '-m', 'hmac-sha2-512-etm@openssh.com']],
  ['aes192-ctr + hmac-sha1', ['-c', 'aes192-ctr', '-m', 'hmac-sha1']],
  ['aes128-ctr + hmac-sha2-256-etm, rekeyed every 1 MiB', ['-c', 'aes128-ctr', '-m', 'hmac-sha2-256-etm@openssh.com', '-o', 'RekeyLimit=1M']],
];

test('every cipher ssh2 offers: adopted, and 3 MiB arrive intact through OpenSSH', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gitwire-ssh-packets-'));
  try {
    const kit = sshKit(dir);
    const u = kit.user('alice');
    loadHostKey(kit.hostKey); // made now, as serve makes its own
    const payload = randomBytes(3 * 1024 * 1024);
    const want = createHash('sha256').update(payload).digest('hex');
    const adopted: boolean[] = [];
    let handshakes = 0;
    const server = new ssh2.Server({ hostKeys: [readFileSync(kit.hostKey)] }, (client) => {
      client.on('handshake', () => { handshakes++; adopted.push(adoptPackets(client)); });
      client.on('authentication', (ctx) => ctx.accept());
      client.on('session', (accept) => {
        accept().on('exec', (acc) => {
          const ch = acc();
          ch.write(payload);
          ch.exit(0);
          ch.end();
        });
      });
      client.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    writeKnownHosts(kit, port);
    try {
      for (const [name, opts] of CASES) {
        adopted.length = 0;
        handshakes = 0;
        const r = await new Promise<{ code: number | null; sum: string; stderr: string }>((resolve) => {
          const c = spawn('ssh', [...sshArgs(kit, u, port), ...opts, 'git@127.0.0.1', 'send'], { env: gitEnv, stdio: ['ignore', 'pipe', 'pipe'] });
          const h = createHash('sha256');
          let stderr = '';
          c.stdout.on('data', (d: Buffer) => h.update(d));
          c.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
          c.on('close', (code) => resolve({ code, sum: h.digest('hex'), stderr }));
        });
        assert.equal(r.code, 0, `${name}: ${r.stderr}`);
        assert.equal(r.sum, want, `${name}: the bytes arrived intact`);
        assert.ok(adopted.length >= 1 && adopted.every(Boolean), `${name}: adopted after each of ${handshakes} key exchanges (${adopted})`);
        if (name.includes('rekeyed')) assert.ok(handshakes >= 2, `${name}: the client rekeyed (${handshakes} key exchanges)`);
      }
    } finally {
      await new Promise((r) => server.close(r));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
