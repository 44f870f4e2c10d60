CREATE TABLE "catalogue_counts" (
	"city_id" integer NOT NULL,
	"property_type_id" smallint NOT NULL,
	"deal_type_id" smallint NOT NULL,
	"district_id" integer NOT NULL,
	"rooms" integer NOT NULL,
	"listings" integer NOT NULL,
	CONSTRAINT "catalogue_counts_city_id_property_type_id_deal_type_id_district_id_rooms_pk" PRIMARY KEY("city_id","property_type_id","deal_type_id","district_id","rooms")
);
--> statement-breakpoint
CREATE TABLE "catalogue_counts_by_city" (
	"city_id" integer NOT NULL,
	"property_type_id" smallint NOT NULL,
	"deal_type_id" smallint NOT NULL,
	"listings" integer NOT NULL,
	CONSTRAINT "catalogue_counts_by_city_city_id_property_type_id_deal_type_id_pk" PRIMARY KEY("city_id","property_type_id","deal_type_id")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"type" text NOT NULL,
	"tenant_id" integer,
	"data" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"dispatched_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"tenant_id" integer NOT NULL,
	"key" text NOT NULL,
	"request_digest" text NOT NULL,
	"response_status" smallint NOT NULL,
	"response_body" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_tenant_id_key_pk" PRIMARY KEY("tenant_id","key")
);
--> statement-breakpoint
CREATE TABLE "owners" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "owners_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"tenant_id" integer NOT NULL,
	"name" text NOT NULL,
	"phone" text NOT NULL,
	"notes" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "owners_tenant_id_phone_key" UNIQUE("tenant_id","phone")
);
--> statement-breakpoint
CREATE TABLE "properties" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "properties_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"tenant_id" integer NOT NULL,
	"status_id" smallint DEFAULT 1 NOT NULL,
	"property_type_id" smallint NOT NULL,
	"deal_type_id" smallint NOT NULL,
	"price" numeric(15, 2),
	"description" text,
	"owner_id" integer,
	"city_id" integer,
	"district_id" integer,
	"residential_complex_id" integer,
	"address" text,
	"street" text,
	"house_number" text,
	"apartment_number" text,
	"latitude" numeric(9, 6),
	"longitude" numeric(9, 6),
	"attributes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"area" numeric(12, 2) GENERATED ALWAYS AS (((attributes ->> 'area')::numeric(12,2))) STORED,
	"rooms" integer GENERATED ALWAYS AS (((attributes ->> 'rooms')::integer)) STORED,
	"floor" integer GENERATED ALWAYS AS (((attributes ->> 'floor')::integer)) STORED,
	"total_floors" integer GENERATED ALWAYS AS (((attributes ->> 'total_floors')::integer)) STORED,
	"moderation" jsonb,
	"review_requested_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone,
	CONSTRAINT "properties_published_has_city_check" CHECK ("properties"."status_id" <> 2 or "properties"."city_id" is not null)
);
--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "owners" ADD CONSTRAINT "owners_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_status_id_property_statuses_id_fk" FOREIGN KEY ("status_id") REFERENCES "public"."property_statuses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_property_type_id_property_types_id_fk" FOREIGN KEY ("property_type_id") REFERENCES "public"."property_types"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_deal_type_id_deal_types_id_fk" FOREIGN KEY ("deal_type_id") REFERENCES "public"."deal_types"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_owner_id_owners_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."owners"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_city_id_cities_id_fk" FOREIGN KEY ("city_id") REFERENCES "public"."cities"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_district_in_city_fkey" FOREIGN KEY ("district_id","city_id") REFERENCES "public"."districts"("id","city_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_complex_in_city_fkey" FOREIGN KEY ("residential_complex_id","city_id") REFERENCES "public"."residential_complexes"("id","city_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "events_undispatched_idx" ON "events" USING btree ("id") WHERE "events"."dispatched_at" is null;--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "properties_tenant_recent_idx" ON "properties" USING btree ("tenant_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "properties_review_queue_idx" ON "properties" USING btree ("review_requested_at") WHERE "properties"."review_requested_at" is not null;--> statement-breakpoint
CREATE INDEX "catalogue_recent_idx" ON "properties" USING btree ("created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST) WHERE "properties"."status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_city_recent_idx" ON "properties" USING btree ("city_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST) WHERE "properties"."status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_city_type_deal_recent_idx" ON "properties" USING btree ("city_id","property_type_id","deal_type_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST) WHERE "properties"."status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_type_deal_recent_idx" ON "properties" USING btree ("property_type_id","deal_type_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST) WHERE "properties"."status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_city_price_idx" ON "properties" USING btree ("city_id","price","id") WHERE "properties"."status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_price_idx" ON "properties" USING btree ("price","id") WHERE "properties"."status_id" = 2;--> statement-breakpoint
CREATE INDEX "properties_owner_id_idx" ON "properties" USING btree ("owner_id");