import { z } from 'zod';

/** International format with a leading plus (E.164), as the spec writes contact numbers. */
export const phoneSchema = z
	.string()
	.regex(
		/^\+[1-9]\d{6,14}$/,
		'must be a phone number in international format with a leading plus, e.g. +15551234567',
	);
