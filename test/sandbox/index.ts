export { startSandbox } from './server';
export { CONTROL_API_SUMMARY } from './control-routes';
export {
	ANSWER_SETTINGS,
	ANSWER_SETTING_NAMES,
	DEFAULT_ANSWERS,
	parseAnswersSpec,
	type AnswerSetting,
	type Answers,
} from './answers';
export { SIGNATURE_HEADER } from './webhook';
export { maskRecipient } from './messaging';
export { SEEDED_NUMBERS, ACCOUNT_ID } from './seed';
export {
	MEDIA_RETENTION_SECONDS,
	REPLY_WINDOW_SECONDS,
	SIGNED_URL_TTL_SECONDS,
	DEFAULT_WEBHOOK_TIMEOUT_MS,
} from './policy';
export * from './types';
