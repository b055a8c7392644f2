/** The mesh's apt repository and the package pushes recorded in the ledger. */
export { foldFlatDist } from './apt-repo.controller.js';
export { AptRepository } from './apt-repository.js';
export { PackagesModule } from './packages.module.js';
export { RepoKey } from './repo-key.js';
