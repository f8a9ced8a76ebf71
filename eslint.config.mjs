// The rules n8n's community-package scanner applies: @n8n/eslint-plugin-community-nodes'
// recommended config plus eslint-plugin-n8n-nodes-base's community, credentials and nodes sets,
// on nodes/, credentials/ and package.json. The scanner ignores eslint-disable comments, so none are used.
import tsParser from '@typescript-eslint/parser';
import jsoncParser from 'jsonc-eslint-parser';
import { n8nCommunityNodesPlugin } from '@n8n/eslint-plugin-community-nodes';
import n8nNodesBase from 'eslint-plugin-n8n-nodes-base';

export default [
	{ ignores: ['dist/**', 'node_modules/**', 'test/**', 'bench/**', 'scripts/**', 'examples/**', '*.js', '*.mjs'] },
	{
		files: ['nodes/**/*.ts', 'credentials/**/*.ts', 'package.json'],
		...n8nCommunityNodesPlugin.configs.recommended,
	},
	{
		files: ['nodes/**/*.ts', 'credentials/**/*.ts'],
		languageOptions: { parser: tsParser, parserOptions: { sourceType: 'module' } },
	},
	{
		files: ['package.json'],
		languageOptions: { parser: jsoncParser },
		plugins: { 'n8n-nodes-base': n8nNodesBase },
		rules: { ...n8nNodesBase.configs.community.rules },
	},
	{
		files: ['credentials/**/*.ts'],
		plugins: { 'n8n-nodes-base': n8nNodesBase },
		rules: { ...n8nNodesBase.configs.credentials.rules },
	},
	{
		files: ['nodes/**/*.ts'],
		plugins: { 'n8n-nodes-base': n8nNodesBase },
		rules: { ...n8nNodesBase.configs.nodes.rules },
	},
];
