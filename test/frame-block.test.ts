/**
 * The frame blocks a whole pack is read into (src/pktline/frame-block.ts):
 * big ones (2 MiB) while all requests together hold under 64 MiB of them,
 * small ones (512 KiB) past that, so a hundred clones at once do not hold
 * 400 MiB of blocks; a block given back twice counts once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FRAMES_PER_BLOCK, FRAMES_PER_SMALL_BLOCK, FrameBlock } from '../src/pktline/frame-block.js';
import { LARGE_PACKET_MAX, SIDEBAND_64K_MAX } from '../src/pktline/codec.js';

test('big blocks up to the budget, small ones past it; the budget comes back as blocks are given', () => {
  assert.equal(FrameBlock.bigBytesOut, 0);
  const big = FRAMES_PER_BLOCK * LARGE_PACKET_MAX;
  const held: FrameBlock[] = [];
  for (;;) {
    const b = FrameBlock.take();
    held.push(b);
    if (b.frames !== FRAMES_PER_BLOCK) break;
  }
  const last = held.at(-1)!;
  assert.equal(last.frames, FRAMES_PER_SMALL_BLOCK);
  assert.equal(last.buf.length, FRAMES_PER_SMALL_BLOCK * LARGE_PACKET_MAX);
  assert.equal(last.capacity, FRAMES_PER_SMALL_BLOCK * SIDEBAND_64K_MAX);
  const bigs = held.length - 1;
  // 64 MiB of big blocks: 32 (16 requests, each one read ahead of one written)
  assert.equal(bigs, Math.floor((64 * 1024 * 1024) / big));
  assert.equal(FrameBlock.bigBytesOut, bigs * big);
  // given back twice, counted once
  held[0]!.give();
  held[0]!.give();
  assert.equal(FrameBlock.bigBytesOut, (bigs - 1) * big);
  const again = FrameBlock.take();
  assert.equal(again.frames, FRAMES_PER_BLOCK, 'a big block again once one came back');
  held[0] = again;
  for (const b of held) b.give();
  assert.equal(FrameBlock.bigBytesOut, 0);
  // a block's views are its frames' payload areas
  const s = FrameBlock.take();
  assert.equal(s.frames, FRAMES_PER_BLOCK);
  const views = s.views(-1);
  assert.equal(views.length, FRAMES_PER_BLOCK);
  assert.equal(views[0]!.length, SIDEBAND_64K_MAX);
  s.give();
});
