const path = require('path');
const { task, src, dest, parallel } = require('gulp');

// n8n resolves `icon: 'file:…'` relative to the built .js file, so dist/ must keep the
// source layout: icons/ next to credentials/ and nodes/, and any SVG inside a node folder.
function copySharedIcons() {
	return src(path.resolve('icons', '*.svg'), { encoding: false }).pipe(
		dest(path.resolve('dist', 'icons')),
	);
}

function copyNodeIcons() {
	return src(path.resolve('nodes', '**', '*.svg'), { encoding: false, allowEmpty: true }).pipe(
		dest(path.resolve('dist', 'nodes')),
	);
}

task('build:icons', parallel(copySharedIcons, copyNodeIcons));
