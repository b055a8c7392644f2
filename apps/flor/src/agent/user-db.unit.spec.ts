import { parseIdTable } from './user-db.js';

describe('parseIdTable', () => {
  it('maps names to ids from passwd and group lines, first entry winning, skipping comments and junk', () => {
    const text = [
      'root:x:0:0:root:/root:/bin/bash',
      '# comment',
      '',
      'daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin',
      'nogroup:x:65534:',
      'root:x:99:',
      'broken',
      'bad:x:notanumber:',
    ].join('\n');
    expect(parseIdTable(text)).toEqual(
      new Map([
        ['root', 0],
        ['daemon', 1],
        ['nogroup', 65534],
      ]),
    );
  });
});
