/** A hand-drawn SVG: write calls per case (log scale) and the CPU ratio per case, gitwire against git. */
export function drawChart(rows) {
  const W = 900, rowH = 26, pad = 230;
  const withWrites = rows.filter((r) => r.git.writes && r.gitwire.writes);
  const withCpu = rows.filter((r) => Number.isFinite(r.git.cpuMs) && Number.isFinite(r.gitwire.cpuMs) && r.git.cpuMs > 0);
  const h1 = 40 + withWrites.length * rowH * 1.6, h2 = 40 + withCpu.length * rowH;
  const H = h1 + h2 + 40;
  const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');
  let y = 30;
  const maxW = Math.max(1, ...withWrites.flatMap((r) => [r.git.writes, r.gitwire.writes]));
  const scale = (v) => ((W - pad - 80) * Math.log10(1 + v)) / Math.log10(1 + maxW);
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">\n<rect width="100%" height="100%" fill="white"/>\n`;
  s += `<text x="10" y="18" font-weight="bold">Write calls by the serving process (log scale): git (grey) vs gitwire (blue)</text>\n`;
  for (const r of withWrites) {
    s += `<text x="10" y="${y + 12}">${esc(`${r.name} · ${r.fixture}`)}</text>\n`;
    s += `<rect x="${pad}" y="${y}" width="${scale(r.git.writes)}" height="10" fill="#999"/><text x="${pad + scale(r.git.writes) + 4}" y="${y + 9}">${r.git.writes}</text>\n`;
    s += `<rect x="${pad}" y="${y + 12}" width="${scale(r.gitwire.writes)}" height="10" fill="#2b6cb0"/><text x="${pad + scale(r.gitwire.writes) + 4}" y="${y + 21}">${r.gitwire.writes}</text>\n`;
    y += rowH * 1.6;
  }
  y += 20;
  s += `<text x="10" y="${y}" font-weight="bold">CPU of the serving side, gitwire / git (log scale; dashed line = 1.0, left of it is better)</text>\n`;
  y += 12;
  const ratios = withCpu.map((r) => r.gitwire.cpuMs / r.git.cpuMs);
  const lo = Math.min(0.25, ...ratios), hi = Math.max(4, ...ratios);
  const rx = (v) => pad + ((W - pad - 80) * (Math.log10(v) - Math.log10(lo))) / (Math.log10(hi) - Math.log10(lo));
  for (const r of withCpu) {
    const ratio = r.gitwire.cpuMs / r.git.cpuMs;
    s += `<text x="10" y="${y + 12}">${esc(`${r.name} · ${r.fixture}`)}</text>\n`;
    const x1 = Math.min(rx(1), rx(ratio)), x2 = Math.max(rx(1), rx(ratio));
    s += `<rect x="${x1}" y="${y + 2}" width="${Math.max(1, x2 - x1)}" height="14" fill="${ratio <= 1 ? '#2f855a' : '#c05621'}"/><text x="${x2 + 4}" y="${y + 13}">${ratio.toFixed(2)}</text>\n`;
    y += rowH;
  }
  s += `<line x1="${rx(1)}" x2="${rx(1)}" y1="${h1 + 10}" y2="${y}" stroke="black" stroke-dasharray="4 3"/>\n</svg>\n`;
  return s;
}
