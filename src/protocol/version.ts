/** determine_protocol_version_server(): the highest `version=N` in GIT_PROTOCOL. */
export function protocolVersion(gitProtocol: string | undefined): 0 | 1 | 2 {
  let v: 0 | 1 | 2 = 0;
  for (const item of (gitProtocol ?? '').split(':')) {
    if (!item.startsWith('version=')) continue;
    const n = item.slice(8);
    if (n === '2') v = 2;
    else if (n === '1' && v < 1) v = 1;
  }
  return v;
}
