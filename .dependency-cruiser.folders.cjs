// dependency-cruiser 17, second pass of `npm run lint:deps`: folders of src/ must not form cycles, type-only
// imports included (a folder that names another's types depends on it as much as one that calls it).
// A folder-scoped rule needs a pass of its own; module-level rules are in .dependency-cruiser.cjs.
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
  options: base.options,
};
