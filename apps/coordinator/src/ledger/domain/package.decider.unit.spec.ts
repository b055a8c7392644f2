import { DomainError } from '../../common/index.js';
import { decidePackagePush, type PushedPackage } from './package.decider.js';

const pushed: PushedPackage = {
  name: 'florete-fixture-repo-hello',
  version: '1.0',
  architecture: 'all',
  sha256: 'a'.repeat(64),
  size: 772,
  control: 'Package: florete-fixture-repo-hello',
};

describe('deciding a package push', () => {
  it("records a new version as the next event of the package name's stream", () => {
    expect(decidePackagePush(pushed, undefined, 3)).toEqual({
      kind: 'record',
      event: { type: 'package_pushed', stream: 'package:florete-fixture-repo-hello', revision: 3, data: pushed },
    });
  });

  it('records nothing for the same bytes pushed again', () => {
    expect(decidePackagePush(pushed, { sha256: pushed.sha256, position: 12 }, 4)).toEqual({ kind: 'already_pushed', position: 12 });
  });

  it('refuses other bytes under a version already pushed, naming the package and what holds it', () => {
    let error: unknown;
    try {
      decidePackagePush({ ...pushed, sha256: 'b'.repeat(64) }, { sha256: pushed.sha256, position: 12 }, 4);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('package_conflict');
    expect((error as DomainError).message).toMatch(
      /^florete-fixture-repo-hello 1\.0 \(all\) is already in the repository with other content \(sha256 a{64}, pushed at ledger position 12\)/,
    );
    expect((error as DomainError).details).toEqual({ name: pushed.name, version: '1.0', architecture: 'all', sha256: pushed.sha256 });
  });
});
