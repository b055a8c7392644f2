/** `nodes[0].services[1].port` from a data path. */
export function pathText(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

/** The data path a pathText names: `nodes[0].services[1].port` → nodes, 0, services, 1, port. Undefined for text pathText never writes. */
export function dataPath(text: string): PropertyKey[] | undefined {
  const path: PropertyKey[] = [];
  const segment = /\[(\d+)\]|(?:^|\.)([A-Za-z_][A-Za-z0-9_-]*)/y;
  while (segment.lastIndex < text.length) {
    const m = segment.exec(text);
    if (!m) return undefined;
    path.push(m[1] !== undefined ? Number(m[1]) : m[2]);
  }
  return pathText(path) === text ? path : undefined;
}
