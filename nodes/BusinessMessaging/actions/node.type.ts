/** Resource → operation values of the node, as the router dispatches them. */
type BusinessMessagingMap = {
	account: 'ping';
	key: 'getMany';
	log: 'getMany';
	media: 'download';
	message: 'getMany' | 'getStatus' | 'reply' | 'replyAndWait';
	webhook: 'get';
};

export type BusinessMessagingType = {
	[R in keyof BusinessMessagingMap]: { resource: R; operation: BusinessMessagingMap[R] };
}[keyof BusinessMessagingMap];
