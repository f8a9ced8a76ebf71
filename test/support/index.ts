// What the tests share: the sandbox set-up, the one signing helper, the envelope and item
// fixtures, and a local webhook receiver. Nothing here imports from nodes/.
// (bench/, scripts/ and the sandbox import './signature' or './fixtures' directly: this index
// also brings in jest's hooks.)
export { describeWithSandbox, useSandbox, type SandboxHooksOptions } from './sandbox';
export { signBody, signedRequest } from './signature';
export {
	ENVELOPE_CONTACT,
	echoEnvelope,
	inboundEnvelope,
	inboundItem,
	serviceTimestamp,
	statusEnvelope,
} from './fixtures';
export { startReceiver, type ReceivedRequest, type Receiver, type ReceiverMode } from './receiver';
