/** Resource → operation values of the node, as the router dispatches them. */
export type BusinessMessagingMap = {
	account: 'ping';
	key: 'getMany';
	log: 'getMany';
	media: 'download';
	message: 'getMany' | 'getStatus' | 'reply';
	webhook: 'get';
};

export type BusinessMessagingResource = keyof BusinessMessagingMap;
