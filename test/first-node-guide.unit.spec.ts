import { readFileSync } from 'node:fs';
import { FIRST_NODE_GUIDES, isUnder, readOnlyFolders, setFoldersIn, unitSettings, unreadableFolders } from './support/agent-unit.js';

/**
 * The first-node guides against the agent's unit as shipped: `flor agent apply --set` hands the
 * folder to the daemon, which the unit runs, so the folder must be one the unit lets it read; and
 * what the guides say the unit forbids must be what it forbids.
 */
describe('the first-node guides match the agent unit', () => {
  const settings = unitSettings();

  it('reads the unit it checks against', () => {
    expect(settings.get('ExecStart')).toEqual(['/usr/bin/flor agent run --config /etc/florete/agent.yaml']);
    // A parser that found nothing would pass everything below.
    expect(unreadableFolders(unitSettings('ProtectHome=true\nPrivateTmp=true\n'))).toEqual(['/home', '/root', '/run/user', '/tmp', '/var/tmp']);
    expect(readOnlyFolders(unitSettings('ProtectSystem=full\n'))).toContain('/etc');
  });

  it.each(FIRST_NODE_GUIDES)('%s puts the set where the agent run by the unit can read it', (guide) => {
    const folders = setFoldersIn(readFileSync(guide, 'utf8'));
    expect(folders.length).toBeGreaterThan(0);
    const hidden = unreadableFolders(settings);
    expect(folders.filter((f) => hidden.some((h) => isUnder(f, h)))).toEqual([]);
  });

  it('the operator guide applies the folder it copied the set to', () => {
    const text = readFileSync('docs/operator-guide.md', 'utf8');
    const copied = [...text.matchAll(/scp -r \S+ \S+:(\/[^\s`]+)/g)].map((m) => m[1]);
    const applied = [...text.matchAll(/flor agent apply --set (\/[^\s`]+)/g)].map((m) => m[1]);
    expect(copied.length).toBe(1);
    expect(new Set(applied)).toEqual(new Set(copied));
  });

  it.each(FIRST_NODE_GUIDES)('%s calls read-only only what the unit makes read-only, and widens no write access the unit already gives', (guide) => {
    const text = readFileSync(guide, 'utf8');
    const readOnly = readOnlyFolders(settings);
    const claimed = [...text.matchAll(/`(\/[^`\s]*)` read-only/g)].map((m) => m[1]);
    expect(claimed.filter((p) => !readOnly.some((r) => isUnder(p, r)))).toEqual([]);
    const widened = [...text.matchAll(/ReadWritePaths=(\/[^\s`]+)/g)].map((m) => m[1]);
    expect(widened.filter((p) => !readOnly.some((r) => isUnder(p, r)))).toEqual([]);
  });
});
