// What the tests share: the package's node and credential names, the sandbox set-up, the one
// signing helper, the envelope and item fixtures (contacts, key, secrets), and a local webhook
// receiver. Nothing here imports from nodes/.
// (bench/, scripts/, the real-n8n driver and the sandbox import './constants', './signature' or
// './fixtures' directly: this index also brings in jest's hooks.)
export {
	ACTION_NAME,
	ACTION_TYPE,
	CREDENTIAL_TYPE,
	PACKAGE_NAME,
	POLLING_NAME,
	POLLING_TYPE,
	TOOL_TYPE,
	TRIGGER_NAME,
	TRIGGER_TYPE,
} from './constants';
export { describeWithSandbox, useSandbox, type SandboxHooksOptions } from './sandbox';
export { signBody, signedRequest } from './signature';
export {
	API_KEY,
	CONTACT,
	FOREIGN_URL,
	NUMBER,
	OTHER_CONTACT,
	SIGNING_SECRET,
	WRONG_SECRET,
	echoEnvelope,
	inboundEnvelope,
	inboundItem,
	serviceTimestamp,
	statusEnvelope,
} from './fixtures';
export {
	startReceiver,
	useReceiver,
	type ReceivedRequest,
	type Receiver,
	type ReceiverMode,
} from './receiver';
