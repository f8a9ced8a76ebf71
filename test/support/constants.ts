// The names n8n knows this package's nodes and credential by, and the names the nodes get when
// added to a workflow: defined once for the tests, the real-n8n suites (e2e, hardening, queue),
// the benchmarks and the scripts. Plain strings: nothing here imports from nodes/ (the tests check
// the nodes against them).

/** The npm package, as n8n prefixes its node types. */
export const PACKAGE_NAME = 'n8n-nodes-business-messaging';

/** Node types as they stand in workflow JSON. */
export const ACTION_TYPE = `${PACKAGE_NAME}.businessMessaging`;
export const TRIGGER_TYPE = `${PACKAGE_NAME}.businessMessagingTrigger`;
export const POLLING_TYPE = `${PACKAGE_NAME}.businessMessagingPollingTrigger`;
/** The action node as an AI agent's tool (n8n derives it from usableAsTool). */
export const TOOL_TYPE = `${PACKAGE_NAME}.businessMessagingTool`;

/** The credential type (BusinessMessagingApi's name). */
export const CREDENTIAL_TYPE = 'businessMessagingApi';

/** The nodes' default names (defaults.name), as the harness and the workflows name them. */
export const ACTION_NAME = 'Business Messaging';
export const TRIGGER_NAME = 'Business Messaging Trigger';
export const POLLING_NAME = 'Business Messaging Polling Trigger';
