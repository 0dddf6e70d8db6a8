// dependency-cruiser 17, second pass of `npm run lint:deps`: folders of src/ must not form cycles.
// Runs on RUNTIME imports only (tsPreCompilationDeps: false drops `import type` and imports used only as
// types, as the build does): options/ names the contracts (Type<TriggerRepository> ...) in type-only imports,
// which load nothing (docs/architecture.md). A folder-scoped rule cannot filter dependency types, hence a
// pass of its own. Module cycles, type-only imports included, are checked by .dependency-cruiser.cjs.
const base = require('./.dependency-cruiser.cjs');

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular-folders',
      severity: 'error',
      comment:
        'Folders of src/ must not form cycles at runtime (src/a -> src/b -> src/a): each folder is a layer that ' +
        'depends one way. (A folder contains its subfolders, so src/ root files and src/x are not two layers.)',
      scope: 'folder',
      from: { path: '^src/' },
      to: { path: '^src/', circular: true },
    },
  ],
  options: { ...base.options, tsPreCompilationDeps: false },
};
