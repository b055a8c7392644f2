/** The certificate the coordinator serves and the pin new enrolment tokens carry. */
export { ENROLMENT_PIN, type EnrolmentPin } from './enrolment-pin.js';
export { cleartextListenRefusal } from './listen-policy.js';
export { ServedCertificate } from './served-certificate.js';
export { TlsModule } from './tls.module.js';
