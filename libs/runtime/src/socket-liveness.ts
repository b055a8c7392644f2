import { connect } from 'node:net';

/** True when something accepts connections on `path`; a file left by a killed process does not. */
export function socketIsLive(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
