// Shortens the checks a deactivated trigger makes after its delete() (3, 10 and 30 s in n8n), so
// that no test file keeps Jest waiting on them; tests of those checks set their own.
import { afterLeaving } from '../../nodes/BusinessMessagingTrigger/registration/webhookMethods';

afterLeaving.checksMs = [200, 1_000];
